// CUDA kernels of the fused residual ops (add_rms_norm / add_layer_norm): h = x + residual and
// y = norm(h) in one pass over memory, and their backward.
//
// A transformer block adds each sublayer's output x to the residual stream and normalises the sum
// for the next sublayer. Fused, the sum never makes a round trip through DRAM between the add and
// the norm: the forward reads x and residual once and writes h and y once; the backward reads dy,
// h and the gradient arriving at h (dh) once and writes the gradient of the sum once (and x's,
// when x's dtype is narrower than the residual stream's).
//
// h, y and the gradients of h have the residual's dtype R; x has R's dtype, or a 16-bit dtype with
// a float32 residual stream (LLaMA-style models under autocast keep the stream in float32). Rows
// are held in registers: `threads_per_row` threads (a power of two) of `packs` 16-byte packs of R
// each. Shapes these kernels do not take (widths not a multiple of R's pack, pointers not 16-byte
// aligned, rows wider than their registers hold) return false to the caller (norm.cpp), which
// then adds and normalises with the separate kernels.

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <algorithm>

#include "launch.cuh"
#include "norm.h"
#include "norm_plan.h"
#include "pack.cuh"
#include "reduce.cuh"

namespace reference_ops {
namespace cuda {
namespace {

// Bytes of acc_t per row tensor a thread holds (16 floats, 8 doubles): the forward keeps h, the
// backward dy, xhat, g and the running weight / bias gradients; more spills.
constexpr int kMaxAccBytes = 64;
// CTA sizes: rows narrower than this share a CTA; the backward's cap leaves it 128 registers.
constexpr int kAddNormCtaThreads = 256;
constexpr int kFwdMaxThreads = 1024;
constexpr int kBwdMaxThreads = 512;
// Packs per thread a row is spread at (fewer for narrow rows, up to the register limits above).
constexpr int kAddNormTargetPacks = 2;

template <typename R>
constexpr int pack_elems() {
  return kPackBytes / static_cast<int>(sizeof(R));
}

template <typename R>
constexpr int max_elems() {
  return kMaxAccBytes / static_cast<int>(sizeof(at::opmath_type<R>));
}

// A pack of R's element count in any dtype: x's (8 bytes for 16-bit x beside a float32 stream),
// weight's, the stream's own.
template <typename U, typename R>
using PackOf = Pack<U, pack_elems<R>()>;

template <typename U, int N>
__device__ __forceinline__ Pack<U, N> load_ro(const Pack<U, N>* p) {
  return *p;  // const __restrict__ pointers: ptxas emits read-only (LDG.CONSTANT) loads
}

template <typename U, int N>
__device__ __forceinline__ void zero(Pack<U, N>& p) {
#pragma unroll
  for (int e = 0; e < N; ++e) {
    p.v[e] = U(0);
  }
}

// Where a thread's packs lie: slot p is pack lane + p * group of its row.
struct Slots {
  int lane;
  int group;
  int packs;  // packs in a row
  __device__ __forceinline__ int pack(int p) const { return lane + p * group; }
  __device__ __forceinline__ bool in_row(int p) const { return pack(p) < packs; }
};

template <typename R>
using Scratch = ReduceScratch<at::opmath_type<R>, 2, kMaxWarps>;

// Sums kN values over the row's threads (every thread of the CTA calls it, the same number of times).
template <int kN, typename U>
__device__ __forceinline__ void row_sums(U (&v)[kN], int group, ReduceScratch<U, 2, kMaxWarps>& scratch, int& calls) {
  if constexpr (kN == 1) {
    U pair[2] = {v[0], U(0)};
    row_reduce(pair, group, 1, scratch, calls);
    v[0] = pair[0];
  } else {
    row_reduce(v, group, 1, scratch, calls);
  }
}

// -----------------------------------------------------------------------------
// Forward
// -----------------------------------------------------------------------------

// One row per group of `threads_per_row` threads: load x and residual (all packs in flight), store
// h = x + residual rounded to R and keep it (as the normalisation must see the h that is saved),
// then the row's statistics from registers (LayerNorm: mean, then the exact sum of squares about
// it) and y = (h - mean) * rstd * weight + bias.
template <typename T, typename R, typename W, Norm kNorm, int kPacks>
__global__ void __launch_bounds__(kFwdMaxThreads, 1)
    add_norm_fwd_kernel(const T* __restrict__ x, const R* __restrict__ residual, const W* __restrict__ weight,
                        const W* __restrict__ bias, R* __restrict__ h, R* __restrict__ y,
                        at::opmath_type<R>* __restrict__ mean_out, at::opmath_type<R>* __restrict__ rstd_out,
                        int64_t rows, int cols, int threads_per_row, at::opmath_type<R> eps) {
  using acc_t = at::opmath_type<R>;
  constexpr int kVec = pack_elems<R>();
  constexpr bool kRms = kNorm == Norm::kRms;
  static_assert(kPacks * kVec <= max_elems<R>(), "a row slice in registers");
  __shared__ Scratch<R> scratch;

  const int group = threads_per_row;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / group) + threadIdx.x / group;
  const bool ok = row < rows;  // groups past the last row still take part in the reductions
  const Slots s{static_cast<int>(threadIdx.x) & (group - 1), group, cols / kVec};
  const int64_t first = (ok ? row : 0) * s.packs;
  const auto* xr = reinterpret_cast<const PackOf<T, R>*>(x) + first;
  const auto* rr = reinterpret_cast<const PackOf<R, R>*>(residual) + first;

  // Load.
  PackOf<T, R> xp[kPacks];
  PackOf<R, R> rp[kPacks];
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    if (ok && s.in_row(p)) {
      xp[p] = load_ro(xr + s.pack(p));
      rp[p] = load_ro(rr + s.pack(p));
    } else {
      zero(xp[p]);
      zero(rp[p]);
    }
  }
  // Add, store h, keep it.
  acc_t v[kPacks][kVec];
  auto* hr = reinterpret_cast<PackOf<R, R>*>(h) + first;
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    PackOf<R, R> hp;
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      hp.v[e] = static_cast<R>(static_cast<acc_t>(xp[p].v[e]) + static_cast<acc_t>(rp[p].v[e]));
      v[p][e] = static_cast<acc_t>(hp.v[e]);
    }
    if (ok && s.in_row(p)) {
      hr[s.pack(p)] = hp;
    }
  }

  // Statistics. Slots past the row hold zeros: they add nothing to the sums, and are left out of
  // the sum of squares about the mean.
  int calls = 0;
  const acc_t inv_cols = acc_t(1) / static_cast<acc_t>(cols);
  acc_t mean = acc_t(0);
  if constexpr (!kRms) {
    acc_t sum[1] = {acc_t(0)};
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        sum[0] += v[p][e];
      }
    }
    row_sums(sum, group, scratch, calls);
    mean = sum[0] * inv_cols;
  }
  acc_t sq[1] = {acc_t(0)};
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    acc_t part = acc_t(0);
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const acc_t d = v[p][e] - mean;
      part += d * d;
    }
    sq[0] += s.in_row(p) ? part : acc_t(0);
  }
  row_sums(sq, group, scratch, calls);
  const acc_t rstd = rsqrt_acc(sq[0] * inv_cols + eps);
  if (ok && s.lane == 0 && rstd_out != nullptr) {
    rstd_out[row] = rstd;
    if (mean_out != nullptr) {
      mean_out[row] = mean;
    }
  }

  // Normalise and store y.
  if (!ok) {
    return;
  }
  const auto* wr = reinterpret_cast<const PackOf<W, R>*>(weight);
  const auto* br = reinterpret_cast<const PackOf<W, R>*>(bias);
  auto* yr = reinterpret_cast<PackOf<R, R>*>(y) + first;
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    if (!s.in_row(p)) {
      continue;
    }
    PackOf<W, R> wp;
    PackOf<W, R> bp;
    if (weight != nullptr) {
      wp = load_ro(wr + s.pack(p));
    }
    if (bias != nullptr) {
      bp = load_ro(br + s.pack(p));
    }
    PackOf<R, R> yp;
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      acc_t t = (v[p][e] - mean) * rstd;
      if (weight != nullptr) {
        t *= static_cast<acc_t>(wp.v[e]);
      }
      if (bias != nullptr) {
        t += static_cast<acc_t>(bp.v[e]);
      }
      yp.v[e] = static_cast<R>(t);
    }
    yr[s.pack(p)] = yp;
  }
}

// -----------------------------------------------------------------------------
// Backward
// -----------------------------------------------------------------------------

// The gradient of h = x + residual (both inputs get it; x's in its own dtype when narrower) from the
// norm's backward and the gradient that reaches h itself (dh, the residual stream's; may be absent):
//   xhat = (h - mean) * rstd,  g = dy * weight,
//   dh_total = rstd * (g - xhat * mean(g * xhat) - mean(g)) + dh     (RMSNorm: no mean(g) term).
// A persistent grid: each row group takes rows group, group + groups, ..., and sums dy * xhat and
// dy per column in registers; its sums go to one row of `partial` ([groups, cols]), which
// column_sums_kernel adds up into dweight / dbias.
template <typename T, typename R, typename W, Norm kNorm, int kPacks>
__global__ void __launch_bounds__(kBwdMaxThreads, 1)
    add_norm_bwd_kernel(const R* __restrict__ dy, const R* __restrict__ dh, const R* __restrict__ h,
                        const at::opmath_type<R>* __restrict__ mean, const at::opmath_type<R>* __restrict__ rstd,
                        const W* __restrict__ weight, R* __restrict__ dsum, T* __restrict__ dx,
                        at::opmath_type<R>* __restrict__ partial_w, at::opmath_type<R>* __restrict__ partial_b,
                        int64_t rows, int cols, int threads_per_row) {
  using acc_t = at::opmath_type<R>;
  constexpr int kVec = pack_elems<R>();
  constexpr bool kRms = kNorm == Norm::kRms;
  static_assert(kPacks * kVec <= max_elems<R>(), "a row slice in registers");
  __shared__ Scratch<R> scratch;

  const int group = threads_per_row;
  const int groups_per_cta = blockDim.x / group;
  const int64_t group_id = static_cast<int64_t>(blockIdx.x) * groups_per_cta + threadIdx.x / group;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * groups_per_cta;
  const Slots s{static_cast<int>(threadIdx.x) & (group - 1), group, cols / kVec};
  const acc_t inv_cols = acc_t(1) / static_cast<acc_t>(cols);
  const auto* wr = reinterpret_cast<const PackOf<W, R>*>(weight);

  acc_t dw[kPacks][kVec];
  acc_t db[kPacks][kVec];
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      dw[p][e] = acc_t(0);
      db[p][e] = acc_t(0);
    }
  }
  int calls = 0;
  // The loop's bound is the CTA's (its first row group's), so every thread runs every reduction.
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * groups_per_cta; base < rows; base += stride) {
    const int64_t row = base + threadIdx.x / group;
    const bool ok = row < rows;
    const int64_t first = (ok ? row : 0) * s.packs;
    PackOf<R, R> dyp[kPacks];
    PackOf<R, R> hp[kPacks];
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      if (ok && s.in_row(p)) {
        dyp[p] = load_ro(reinterpret_cast<const PackOf<R, R>*>(dy) + first + s.pack(p));
        hp[p] = load_ro(reinterpret_cast<const PackOf<R, R>*>(h) + first + s.pack(p));
      } else {
        zero(dyp[p]);
        zero(hp[p]);
      }
    }
    const acc_t mu = kRms || !ok ? acc_t(0) : mean[row];
    const acc_t rs = ok ? rstd[row] : acc_t(0);
    // xhat and g = dy * weight, and the row's sums of g * xhat and g.
    acc_t xhat[kPacks][kVec];
    acc_t g[kPacks][kVec];
    acc_t sums[2] = {acc_t(0), acc_t(0)};
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      PackOf<W, R> wp;
      if (weight != nullptr && s.in_row(p)) {
        wp = load_ro(wr + s.pack(p));
      }
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const acc_t d = static_cast<acc_t>(dyp[p].v[e]);
        xhat[p][e] = (static_cast<acc_t>(hp[p].v[e]) - mu) * rs;
        g[p][e] = weight != nullptr && s.in_row(p) ? d * static_cast<acc_t>(wp.v[e]) : d;
        sums[0] += g[p][e] * xhat[p][e];
        sums[1] += g[p][e];
        dw[p][e] += d * xhat[p][e];
        db[p][e] += d;
      }
    }
    row_sums(sums, group, scratch, calls);
    const acc_t c1 = sums[0] * inv_cols;
    const acc_t c2 = kRms ? acc_t(0) : sums[1] * inv_cols;
    if (!ok) {
      continue;
    }
    // dh_total, stored in R (and in x's dtype T when it differs).
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      if (!s.in_row(p)) {
        continue;
      }
      PackOf<R, R> dhp;
      if (dh != nullptr) {
        dhp = load_ro(reinterpret_cast<const PackOf<R, R>*>(dh) + first + s.pack(p));
      }
      PackOf<R, R> out;
      PackOf<T, R> out_x;
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        acc_t t = rs * (g[p][e] - xhat[p][e] * c1 - c2);
        if (dh != nullptr) {
          t += static_cast<acc_t>(dhp.v[e]);
        }
        out.v[e] = static_cast<R>(t);
        out_x.v[e] = static_cast<T>(t);
      }
      reinterpret_cast<PackOf<R, R>*>(dsum)[first + s.pack(p)] = out;
      if constexpr (!std::is_same_v<T, R>) {
        reinterpret_cast<PackOf<T, R>*>(dx)[first + s.pack(p)] = out_x;
      }
    }
  }
  // This group's column sums.
  if (partial_w == nullptr && partial_b == nullptr) {
    return;
  }
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    if (!s.in_row(p)) {
      continue;
    }
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const int64_t at = group_id * cols + static_cast<int64_t>(s.pack(p)) * kVec + e;
      if (partial_w != nullptr) {
        partial_w[at] = dw[p][e];
      }
      if (partial_b != nullptr) {
        partial_b[at] = db[p][e];
      }
    }
  }
}

// out[c] = sum over g of partial[g][c], in a fixed order. CTAs of 32 columns x 8 row slices.
constexpr int kColumnThreadsX = 32;
constexpr int kColumnThreadsY = 8;

template <typename W, typename acc_t>
__global__ void __launch_bounds__(kColumnThreadsX* kColumnThreadsY)
    column_sums_kernel(const acc_t* __restrict__ partial, int64_t groups, int cols, W* __restrict__ out) {
  __shared__ acc_t part[kColumnThreadsY][kColumnThreadsX + 1];
  const int c = blockIdx.x * kColumnThreadsX + threadIdx.x;
  acc_t sum = acc_t(0);
  if (c < cols) {
#pragma unroll 4
    for (int64_t g = threadIdx.y; g < groups; g += kColumnThreadsY) {
      sum += partial[g * cols + c];
    }
  }
  part[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
#pragma unroll
    for (int i = 1; i < kColumnThreadsY; ++i) {
      sum += part[i][threadIdx.x];
    }
    out[c] = static_cast<W>(sum);
  }
}

// -----------------------------------------------------------------------------
// Launch
// -----------------------------------------------------------------------------

// How a row is spread: `threads` threads of `packs` packs each. packs == 0: not taken.
struct AddNormShape {
  int threads = 0;
  int packs = 0;
};

AddNormShape add_norm_shape(int64_t cols, int vec, int max_elems, int max_threads) {
  if (cols % vec != 0) {
    return {};
  }
  const RowConfig rc = choose_row_config(cols / vec, kAddNormTargetPacks, max_threads);
  if (rc.packs_per_thread * vec > max_elems ||
      static_cast<int64_t>(rc.packs_per_thread) * rc.threads_per_row * vec < cols) {
    return {};
  }
  return {rc.threads_per_row, rc.packs_per_thread};
}

// Whether a tensor (absent: yes) starts at a multiple of its pack of R's element count: 16 bytes
// for the stream's tensors, 8 for a 16-bit x beside a float32 stream, 32 for float32 parameters
// beside a 16-bit stream.
template <typename U, typename R>
bool pack_aligned(const at::Tensor& t) {
  return !t.defined() || is_aligned(t.data_ptr(), static_cast<int64_t>(sizeof(PackOf<U, R>)));
}

template <typename T, typename R, typename W>
bool launch_fwd(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight, const at::Tensor& bias,
                at::Tensor& h, at::Tensor& y, at::Tensor& mean, at::Tensor& rstd, NormShape shape, double eps,
                bool rms) {
  using acc_t = at::opmath_type<R>;
  constexpr int kVec = pack_elems<R>();
  const AddNormShape rs = add_norm_shape(shape.cols, kVec, max_elems<R>(), kFwdMaxThreads);
  if (rs.packs == 0 || !pack_aligned<T, R>(x) || !pack_aligned<R, R>(residual) || !pack_aligned<W, R>(weight) ||
      !pack_aligned<W, R>(bias) || !pack_aligned<R, R>(h) || !pack_aligned<R, R>(y)) {
    return false;
  }
  if (shape.rows == 0) {
    return true;
  }
  const int cta = std::max(rs.threads, kAddNormCtaThreads);
  const int64_t grid = ceil_div(shape.rows, cta / rs.threads);
  auto* mean_p = mean.defined() ? mean.data_ptr<acc_t>() : nullptr;
  auto* rstd_p = rstd.defined() ? rstd.data_ptr<acc_t>() : nullptr;
  packs_switch(rs.packs, [&](auto packs_c) {
    constexpr int kP = decltype(packs_c)::value;
    if constexpr (kP * kVec <= max_elems<R>()) {
      auto launch = [&](auto norm_c) {
        constexpr Norm kN = decltype(norm_c)::value;
        add_norm_fwd_kernel<T, R, W, kN, kP><<<grid, cta, 0, at::cuda::getCurrentCUDAStream()>>>(
            reinterpret_cast<const T*>(x.data_ptr()), reinterpret_cast<const R*>(residual.data_ptr()),
            weight.defined() ? reinterpret_cast<const W*>(weight.data_ptr()) : nullptr,
            bias.defined() ? reinterpret_cast<const W*>(bias.data_ptr()) : nullptr, reinterpret_cast<R*>(h.data_ptr()),
            reinterpret_cast<R*>(y.data_ptr()), mean_p, rstd_p, shape.rows, static_cast<int>(shape.cols), rs.threads,
            static_cast<acc_t>(eps));
      };
      if (rms) {
        launch(std::integral_constant<Norm, Norm::kRms>{});
      } else {
        launch(std::integral_constant<Norm, Norm::kLayerNorm>{});
      }
    }
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

template <typename T, typename R, typename W>
bool launch_bwd(const at::Tensor& dy, const at::Tensor& dh, const at::Tensor& h, const at::Tensor& mean,
                const at::Tensor& rstd, const at::Tensor& weight, at::Tensor& dsum, at::Tensor& dx, at::Tensor& dweight,
                at::Tensor& dbias, NormShape shape, bool rms) {
  using acc_t = at::opmath_type<R>;
  constexpr int kVec = pack_elems<R>();
  const AddNormShape rs = add_norm_shape(shape.cols, kVec, max_elems<R>(), kBwdMaxThreads);
  if (rs.packs == 0 || !pack_aligned<R, R>(dy) || !pack_aligned<R, R>(dh) || !pack_aligned<R, R>(h) ||
      !pack_aligned<W, R>(weight) || !pack_aligned<R, R>(dsum) || !pack_aligned<T, R>(dx)) {
    return false;
  }
  const int cta = std::max(rs.threads, kAddNormCtaThreads);
  const int groups_per_cta = cta / rs.threads;
  const bool sums = dweight.defined() || dbias.defined();
  auto run = [&](auto kernel) {
    // As many CTAs as are resident at once (each row group's column sums are one row of the
    // partial table), fewer for calls of fewer rows.
    const int64_t grid =
        std::max<int64_t>(1, std::min(ceil_div(shape.rows, groups_per_cta), resident_blocks(kernel, cta, 0)));
    const int64_t groups = grid * groups_per_cta;
    at::Tensor partial;
    if (sums && shape.rows > 0) {
      partial = at::empty({dweight.defined() && dbias.defined() ? 2 : 1, groups, shape.cols},
                          h.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
    }
    acc_t* pw = dweight.defined() && partial.defined() ? partial.data_ptr<acc_t>() : nullptr;
    acc_t* pb =
        dbias.defined() && partial.defined() ? partial.data_ptr<acc_t>() + (pw ? groups * shape.cols : 0) : nullptr;
    if (shape.rows > 0) {
      kernel<<<grid, cta, 0, at::cuda::getCurrentCUDAStream()>>>(
          reinterpret_cast<const R*>(dy.data_ptr()), dh.defined() ? reinterpret_cast<const R*>(dh.data_ptr()) : nullptr,
          reinterpret_cast<const R*>(h.data_ptr()), mean.defined() ? mean.data_ptr<acc_t>() : nullptr,
          rstd.data_ptr<acc_t>(), weight.defined() ? reinterpret_cast<const W*>(weight.data_ptr()) : nullptr,
          reinterpret_cast<R*>(dsum.data_ptr()), dx.defined() ? reinterpret_cast<T*>(dx.data_ptr()) : nullptr, pw, pb,
          shape.rows, static_cast<int>(shape.cols), rs.threads);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    auto column_sums = [&](const acc_t* part, at::Tensor& out) {
      if (shape.rows == 0) {
        out.zero_();
        return;
      }
      const dim3 block(kColumnThreadsX, kColumnThreadsY);
      column_sums_kernel<W, acc_t>
          <<<ceil_div(shape.cols, kColumnThreadsX), block, 0, at::cuda::getCurrentCUDAStream()>>>(
              part, groups, static_cast<int>(shape.cols), reinterpret_cast<W*>(out.data_ptr()));
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    };
    if (dweight.defined()) {
      column_sums(pw, dweight);
    }
    if (dbias.defined()) {
      column_sums(pb, dbias);
    }
  };
  packs_switch(rs.packs, [&](auto packs_c) {
    constexpr int kP = decltype(packs_c)::value;
    if constexpr (kP * kVec <= max_elems<R>()) {
      if (rms) {
        run(add_norm_bwd_kernel<T, R, W, Norm::kRms, kP>);
      } else {
        run(add_norm_bwd_kernel<T, R, W, Norm::kLayerNorm, kP>);
      }
    }
  });
  return true;
}

// Calls f(T{}, R{}, W{}) for x's dtype T, the stream's dtype R and the parameters' dtype W (R, or
// float32 beside a 16-bit stream).
template <typename F>
void dispatch_add_types(c10::ScalarType x_dtype, c10::ScalarType r_dtype, bool float_params, F&& f) {
  if (x_dtype != r_dtype) {
    TORCH_CHECK(r_dtype == at::kFloat, "reference_ops: internal error, a ", x_dtype, " x beside a ", r_dtype,
                " residual");
    AT_DISPATCH_SWITCH(x_dtype, "reference_ops_add_norm", AT_DISPATCH_CASE(at::kHalf, [&] {
                         f(scalar_t{}, float{}, float{});
                       }) AT_DISPATCH_CASE(at::kBFloat16, [&] { f(scalar_t{}, float{}, float{}); }));
    return;
  }
  dispatch_types(r_dtype, float_params, [&](auto t, auto w) { f(t, t, w); });
}

}  // namespace

bool add_norm_fwd(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight, const at::Tensor& bias,
                  at::Tensor& h, at::Tensor& y, at::Tensor& mean, at::Tensor& rstd, NormShape shape, double eps,
                  bool rms) {
  bool fused = false;
  dispatch_add_types(x.scalar_type(), residual.scalar_type(), has_float_params(residual, weight, bias),
                     [&](auto t, auto r, auto w) {
                       using T = decltype(t);
                       using R = decltype(r);
                       using W = decltype(w);
                       fused = launch_fwd<T, R, W>(x, residual, weight, bias, h, y, mean, rstd, shape, eps, rms);
                     });
  return fused;
}

bool add_norm_bwd(const at::Tensor& dy, const at::Tensor& dh, const at::Tensor& h, const at::Tensor& mean,
                  const at::Tensor& rstd, const at::Tensor& weight, at::Tensor& dsum, at::Tensor& dx,
                  at::Tensor& dweight, at::Tensor& dbias, NormShape shape, bool rms) {
  bool fused = false;
  const c10::ScalarType x_dtype = dx.defined() ? dx.scalar_type() : h.scalar_type();
  dispatch_add_types(x_dtype, h.scalar_type(), has_float_params(h, dweight, dbias), [&](auto t, auto r, auto w) {
    using T = decltype(t);
    using R = decltype(r);
    using W = decltype(w);
    fused = launch_bwd<T, R, W>(dy, dh, h, mean, rstd, weight, dsum, dx, dweight, dbias, shape, rms);
  });
  return fused;
}

}  // namespace cuda
}  // namespace reference_ops
