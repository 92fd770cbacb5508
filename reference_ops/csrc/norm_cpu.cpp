// CPU implementation of the normalisation ops: per row, the exact two-pass mean / variance
// (mean = sum/N, var = sum((x-mean)^2)/N) in float (double for float64); the backward adds the
// dweight / dbias partials of a fixed number of row chunks in chunk order, so results do not
// depend on the thread count.
#include "norm_cpu.h"

#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

namespace reference_ops {

namespace cpu {
namespace {

// Rows per parallel task: about 32K elements of work each.
constexpr int64_t kGrainElems = 32768;

// Elements summed in a block before adding into the row total. The blocks' sums are added in
// double (float32 rows too: one conversion and add per block), so the rounding error stays near
// (kSumBlock / kSumLanes + kSumLanes) * eps of float, however long the row.
constexpr int64_t kSumBlock = 256;

// Independent partial sums within a block: one running sum is a chain of dependent adds, bound by
// the add's latency (it made the forward of an 8x512 float32 LayerNorm 2x slower than torch's);
// lanes let the adds overlap and the compiler keep them in vector registers. The lanes are added
// in a fixed order, so results still do not depend on the thread count.
constexpr int64_t kSumLanes = 8;

// Sums f(c) over c in [0, n) in blocks of kSumBlock, each block in kSumLanes lanes.
template <typename acc_t, typename F>
acc_t blocked_sum(int64_t n, const F& f) {
  double total = 0.0;
  for (int64_t begin = 0; begin < n; begin += kSumBlock) {
    const int64_t end = std::min(n, begin + kSumBlock);
    acc_t lane[kSumLanes] = {};
    int64_t c = begin;
    for (; c + kSumLanes <= end; c += kSumLanes) {
      for (int64_t k = 0; k < kSumLanes; ++k) {
        lane[k] += f(c + k);
      }
    }
    acc_t block = acc_t(0);
    for (; c < end; ++c) {
      block += f(c);
    }
    for (int64_t k = 0; k < kSumLanes; ++k) {
      block += lane[k];
    }
    total += static_cast<double>(block);
  }
  return static_cast<acc_t>(total);
}

// Calls f(has_w, has_b) with std::true_type / std::false_type for whether weight and bias are
// present: a row loop per case, with no test of the parameters per element (with one, the loop
// stayed scalar; without, it vectorises).
template <typename F>
void with_params(bool has_w, bool has_b, const F& f) {
  if (has_w && has_b) {
    f(std::true_type{}, std::true_type{});
  } else if (has_w) {
    f(std::true_type{}, std::false_type{});
  } else if (has_b) {
    f(std::false_type{}, std::true_type{});
  } else {
    f(std::false_type{}, std::false_type{});
  }
}

// Fixed number of row chunks whose dweight / dbias partials are added in order.
constexpr int64_t kBwdChunks = 32;

template <typename scalar_t, typename weight_t>
void norm_fwd_typed(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, at::Tensor& y,
                    at::Tensor& mean, at::Tensor& rstd, NormShape shape, double eps, bool rms) {
  using acc_t = at::opmath_type<scalar_t>;
  const scalar_t* xp = x.const_data_ptr<scalar_t>();
  const weight_t* wp = weight.defined() ? weight.const_data_ptr<weight_t>() : nullptr;
  const weight_t* bp = bias.defined() ? bias.const_data_ptr<weight_t>() : nullptr;
  scalar_t* yp = y.mutable_data_ptr<scalar_t>();
  acc_t* mp = mean.defined() ? mean.mutable_data_ptr<acc_t>() : nullptr;
  acc_t* rp = rstd.defined() ? rstd.mutable_data_ptr<acc_t>() : nullptr;
  const int64_t cols = shape.cols;
  const acc_t inv_cols = acc_t(1) / static_cast<acc_t>(cols);
  const int64_t grain = std::max<int64_t>(1, kGrainElems / cols);
  at::parallel_for(0, shape.rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const scalar_t* xr = xp + row * cols;
      const acc_t m =
          rms ? acc_t(0) : blocked_sum<acc_t>(cols, [&](int64_t c) { return static_cast<acc_t>(xr[c]); }) * inv_cols;
      const acc_t sq = blocked_sum<acc_t>(cols, [&](int64_t c) {
        const acc_t d = static_cast<acc_t>(xr[c]) - m;
        return d * d;
      });
      const acc_t r = acc_t(1) / std::sqrt(sq * inv_cols + static_cast<acc_t>(eps));
      if (mp != nullptr) {
        mp[row] = m;
      }
      if (rp != nullptr) {
        rp[row] = r;
      }
      scalar_t* yr = yp + row * cols;
      with_params(wp != nullptr, bp != nullptr, [&](auto has_w, auto has_b) {
        for (int64_t c = 0; c < cols; ++c) {
          acc_t v = (static_cast<acc_t>(xr[c]) - m) * r;
          if constexpr (decltype(has_w)::value) {
            v *= static_cast<acc_t>(wp[c]);
          }
          if constexpr (decltype(has_b)::value) {
            v += static_cast<acc_t>(bp[c]);
          }
          yr[c] = static_cast<scalar_t>(v);
        }
      });
    }
  });
}

template <typename scalar_t, typename weight_t>
void norm_bwd_typed(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                    const at::Tensor& weight, at::Tensor& dx, at::Tensor& dweight, at::Tensor& dbias, NormShape shape) {
  using acc_t = at::opmath_type<scalar_t>;
  const scalar_t* dyp = dy.const_data_ptr<scalar_t>();
  const scalar_t* xp = x.const_data_ptr<scalar_t>();
  const acc_t* mp = mean.defined() ? mean.const_data_ptr<acc_t>() : nullptr;
  const acc_t* rp = rstd.const_data_ptr<acc_t>();
  const weight_t* wp = weight.defined() ? weight.const_data_ptr<weight_t>() : nullptr;
  scalar_t* dxp = dx.mutable_data_ptr<scalar_t>();
  const int64_t rows = shape.rows;
  const int64_t cols = shape.cols;
  const acc_t inv_cols = acc_t(1) / static_cast<acc_t>(cols);
  const int64_t chunks = std::max<int64_t>(1, std::min(rows, kBwdChunks));
  const int64_t rows_per_chunk = rows == 0 ? 0 : (rows + chunks - 1) / chunks;
  const bool want_dw = dweight.defined();
  const bool want_db = dbias.defined();
  TORCH_INTERNAL_ASSERT(want_dw == (wp != nullptr), "norm_bwd: dweight must be given exactly when weight is");
  std::vector<acc_t> dw_part(want_dw ? chunks * cols : 0, acc_t(0));
  std::vector<acc_t> db_part(want_db ? chunks * cols : 0, acc_t(0));
  // Chunks per task: about kGrainElems elements of work each, as in the forward, so a small input
  // runs on the calling thread (waking the pool costs more than its work). The partials are per
  // chunk, whatever the thread count.
  const int64_t grain = std::max<int64_t>(1, kGrainElems / std::max<int64_t>(1, rows_per_chunk * cols));
  at::parallel_for(0, chunks, grain, [&](int64_t chunk_begin, int64_t chunk_end) {
    for (int64_t chunk = chunk_begin; chunk < chunk_end; ++chunk) {
      const int64_t row_end = std::min(rows, (chunk + 1) * rows_per_chunk);
      for (int64_t row = chunk * rows_per_chunk; row < row_end; ++row) {
        const scalar_t* xr = xp + row * cols;
        const scalar_t* gr = dyp + row * cols;
        const acc_t m = mp != nullptr ? mp[row] : acc_t(0);
        const acc_t r = rp[row];
        scalar_t* dxr = dxp + row * cols;
        acc_t* dw_row = want_dw ? dw_part.data() + chunk * cols : nullptr;
        acc_t* db_row = want_db ? db_part.data() + chunk * cols : nullptr;
        // dweight exists exactly when weight does (norm.cpp): one flag for both.
        with_params(want_dw, want_db, [&](auto has_w, auto has_b) {
          const auto g_at = [&](int64_t c) {
            if constexpr (decltype(has_w)::value) {
              return static_cast<acc_t>(gr[c]) * static_cast<acc_t>(wp[c]);
            } else {
              return static_cast<acc_t>(gr[c]);
            }
          };
          const acc_t sum_g = blocked_sum<acc_t>(cols, g_at);
          const acc_t sum_gx =
              blocked_sum<acc_t>(cols, [&](int64_t c) { return g_at(c) * (static_cast<acc_t>(xr[c]) - m) * r; });
          const acc_t mean_g = mp != nullptr ? sum_g * inv_cols : acc_t(0);
          const acc_t mean_gx = sum_gx * inv_cols;
          for (int64_t c = 0; c < cols; ++c) {
            const acc_t d = static_cast<acc_t>(gr[c]);
            const acc_t xhat = (static_cast<acc_t>(xr[c]) - m) * r;
            dxr[c] = static_cast<scalar_t>(r * (g_at(c) - mean_g - xhat * mean_gx));
            if constexpr (decltype(has_w)::value) {
              dw_row[c] += d * xhat;
            }
            if constexpr (decltype(has_b)::value) {
              db_row[c] += d;
            }
          }
        });
      }
    }
  });
  const auto reduce = [&](const std::vector<acc_t>& part, at::Tensor& out) {
    weight_t* op = out.mutable_data_ptr<weight_t>();
    for (int64_t c = 0; c < cols; ++c) {
      acc_t s = acc_t(0);
      for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        s += part[chunk * cols + c];
      }
      op[c] = static_cast<weight_t>(s);
    }
  };
  if (want_dw) {
    reduce(dw_part, dweight);
  }
  if (want_db) {
    reduce(db_part, dbias);
  }
}

}  // namespace

void norm_fwd(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, at::Tensor& y, at::Tensor& mean,
              at::Tensor& rstd, NormShape shape, double eps, bool rms) {
  dispatch_types(x.scalar_type(), has_float_params(x, weight, bias), [&](auto t, auto w) {
    norm_fwd_typed<decltype(t), decltype(w)>(x, weight, bias, y, mean, rstd, shape, eps, rms);
  });
}

void norm_bwd(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
              const at::Tensor& weight, at::Tensor& dx, at::Tensor& dweight, at::Tensor& dbias, NormShape shape) {
  dispatch_types(x.scalar_type(), has_float_params(x, dweight, dbias), [&](auto t, auto w) {
    norm_bwd_typed<decltype(t), decltype(w)>(dy, x, mean, rstd, weight, dx, dweight, dbias, shape);
  });
}

}  // namespace cpu

}  // namespace reference_ops
