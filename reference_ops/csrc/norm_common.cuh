// Device helpers shared by the forward (norm_fwd.cu) and backward
// (norm_bwd.cu) kernels: 16-byte packs, deterministic warp / block sums,
// the row-width -> launch-configuration choice, and compile-time switches.
#pragma once

#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace reference_ops {
namespace cuda {

// Bytes moved by one vectorised global load or store (LDG.128 / STG.128).
constexpr int kPackBytes = 16;

// Largest number of threads that share one row.
constexpr int kMaxThreadsPerRow = 1024;

// N elements of T stored together so one instruction moves them.
template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

template <typename T, int N>
__device__ __forceinline__ Pack<T, N> load_pack(const T* base, int64_t pack_index) {
  return reinterpret_cast<const Pack<T, N>*>(base)[pack_index];
}

template <typename T, int N>
__device__ __forceinline__ void store_pack(T* base, int64_t pack_index, const Pack<T, N>& p) {
  reinterpret_cast<Pack<T, N>*>(base)[pack_index] = p;
}

// kN elements of T kept as raw 32-bit words: a 16-bit pair stays in one
// register and converts with one instruction (a shift or mask for bfloat16;
// c10's 16-bit types held in an array take a register each). Element indices
// are compile-time after unrolling.
template <typename T, int kN>
struct alignas(sizeof(T) * kN) RawPack {
  static_assert(sizeof(T) * kN % 4 == 0, "a raw pack is whole 32-bit words");
  using acc_t = at::opmath_type<T>;
  using elem_t = T;
  static constexpr int kSize = kN;
  uint32_t w[sizeof(T) * kN / 4];

  // kForm picks one of three equivalent unpackings of a 16-bit element
  // (bfloat16: shift / mask and two byte permutes; float16: the half taken by
  // shift / mask, by a byte permute, or as a __half2 lane): ptxas does not see
  // that they are equal, so a kernel that converts the same words in several
  // passes separated by barriers recomputes them (one instruction each)
  // instead of keeping every converted float alive across the barrier, which
  // spills at 8 packs.
  template <int kForm = 0>
  __device__ __forceinline__ acc_t get(int e) const {
    if constexpr (std::is_same_v<T, c10::BFloat16>) {
      const uint32_t word = w[e >> 1];
      const bool hi = (e & 1) != 0;
      if constexpr (kForm == 1) {
        return __uint_as_float(__byte_perm(word, 0u, hi ? 0x3244u : 0x1044u));
      } else if constexpr (kForm == 2) {
        return __uint_as_float(__byte_perm(0u, word, hi ? 0x7600u : 0x5400u));
      } else {
        return __uint_as_float(hi ? (word & 0xffff0000u) : (word << 16));
      }
    } else if constexpr (std::is_same_v<T, c10::Half>) {
      const uint32_t word = w[e >> 1];
      const bool hi = (e & 1) != 0;
      if constexpr (kForm == 1) {
        // The element's half copied to both halves of a word, then the low half.
        const uint32_t both = __byte_perm(word, 0u, hi ? 0x3232u : 0x1010u);
        return __low2float(*reinterpret_cast<const __half2*>(&both));
      } else if constexpr (kForm == 2) {
        __half2 pair;
        memcpy(&pair, &word, 4);
        const float2 f = __half22float2(pair);
        return hi ? f.y : f.x;
      } else {
        return __half2float(__ushort_as_half(static_cast<unsigned short>(hi ? (word >> 16) : (word & 0xffffu))));
      }
    } else if constexpr (std::is_same_v<T, float>) {
      return __uint_as_float(w[e]);
    } else {
      static_assert(std::is_same_v<T, double>, "RawPack holds bfloat16, float16, float32 or float64");
      return __hiloint2double(static_cast<int>(w[2 * e + 1]), static_cast<int>(w[2 * e]));
    }
  }

  // Elements e and e + 1 (e even), rounded to nearest even like c10's casts.
  __device__ __forceinline__ void set2(int e, acc_t lo, acc_t hi) {
    if constexpr (std::is_same_v<T, c10::BFloat16>) {
      const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
      memcpy(&w[e >> 1], &v, 4);
    } else if constexpr (std::is_same_v<T, c10::Half>) {
      const __half2 v = __floats2half2_rn(lo, hi);
      memcpy(&w[e >> 1], &v, 4);
    } else if constexpr (std::is_same_v<T, float>) {
      w[e] = __float_as_uint(lo);
      w[e + 1] = __float_as_uint(hi);
    } else {
      w[2 * e] = static_cast<uint32_t>(__double2loint(lo));
      w[2 * e + 1] = static_cast<uint32_t>(__double2hiint(lo));
      w[2 * e + 2] = static_cast<uint32_t>(__double2loint(hi));
      w[2 * e + 3] = static_cast<uint32_t>(__double2hiint(hi));
    }
  }

  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int i = 0; i < kWords; ++i) {
      w[i] = 0;
    }
  }

  // Element e as raw bits (16-bit types; one word of a wider type).
  __device__ __forceinline__ uint32_t raw(int e) const {
    if constexpr (sizeof(T) == 2) {
      return (w[e >> 1] >> (16 * (e & 1))) & 0xffffu;
    } else {
      return w[e * kWordsPerElem];
    }
  }

  // Zeroes the elements outside [lo, hi) (rows of odd width: the edge packs of
  // a row span hold elements of the neighbouring rows).
  __device__ __forceinline__ void keep(int lo, int hi) {
#pragma unroll
    for (int e = 0; e < kN; ++e) {
      if (e < lo || e >= hi) {
        if constexpr (sizeof(T) == 2) {
          w[e >> 1] &= (e & 1) ? 0x0000ffffu : 0xffff0000u;
        } else {
#pragma unroll
          for (int i = 0; i < kWordsPerElem; ++i) {
            w[e * kWordsPerElem + i] = 0;
          }
        }
      }
    }
  }

  // Elements [lo, hi) written one at a time to dst[e] (edge packs of a row
  // span).
  __device__ __forceinline__ void store_elems(T* dst, int lo, int hi) const {
#pragma unroll
    for (int e = 0; e < kN; ++e) {
      if (e >= lo && e < hi) {
        if constexpr (sizeof(T) == 2) {
          reinterpret_cast<unsigned short*>(dst)[e] = static_cast<unsigned short>(raw(e));
        } else {
#pragma unroll
          for (int i = 0; i < kWordsPerElem; ++i) {
            reinterpret_cast<uint32_t*>(dst)[e * kWordsPerElem + i] = w[e * kWordsPerElem + i];
          }
        }
      }
    }
  }

  // Elements [0, n) read one at a time from src[e], the rest zero: a pack that
  // runs past the end of its tensor (its last pack, when the tensor's bytes are
  // not a multiple of 16) is never read beyond that end.
  __device__ __forceinline__ void load_elems(const T* src, int n) {
    zero();
#pragma unroll
    for (int e = 0; e < kN; ++e) {
      if (e < n) {
        if constexpr (sizeof(T) == 2) {
          w[e >> 1] |= static_cast<uint32_t>(reinterpret_cast<const unsigned short*>(src)[e]) << (16 * (e & 1));
        } else {
#pragma unroll
          for (int i = 0; i < kWordsPerElem; ++i) {
            w[e * kWordsPerElem + i] = reinterpret_cast<const uint32_t*>(src)[e * kWordsPerElem + i];
          }
        }
      }
    }
  }

  // Elements sh .. sh + kN - 1 of the concatenation lo:hi (0 <= sh < kN). The
  // word offset is applied one bit at a time as selects, so every register
  // index stays a compile-time constant (a run-time index would go to local
  // memory).
  __device__ __forceinline__ static RawPack shifted(const RawPack& lo, const RawPack& hi, int sh) {
    uint32_t cat[2 * kWords];
#pragma unroll
    for (int i = 0; i < kWords; ++i) {
      cat[i] = lo.w[i];
      cat[kWords + i] = hi.w[i];
    }
    const int words = sizeof(T) == 2 ? sh >> 1 : sh * kWordsPerElem;
#pragma unroll
    for (int bit = 0; bit < kLog2Words; ++bit) {
      // A mask, not a ?: of two elements, which the compiler may turn into a
      // run-time index.
      const uint32_t take = 0u - ((words >> bit) & 1u);
#pragma unroll
      for (int i = 0; i < 2 * kWords - (1 << bit); ++i) {
        cat[i] = (cat[i + (1 << bit)] & take) | (cat[i] & ~take);
      }
    }
    RawPack out;
#pragma unroll
    for (int i = 0; i < kWords; ++i) {
      // A 16-bit element at an odd offset straddles two words.
      out.w[i] = sizeof(T) == 2 ? __funnelshift_r(cat[i], cat[i + 1], 16 * (sh & 1)) : cat[i];
    }
    return out;
  }

 private:
  static constexpr int kWords = sizeof(T) * kN / 4;
  static constexpr int kLog2Words = kWords >= 8 ? 3 : kWords >= 4 ? 2 : kWords >= 2 ? 1 : 0;
  static constexpr int kWordsPerElem = sizeof(T) >= 4 ? sizeof(T) / 4 : 1;
};

// A pack written once (dx, y of rows of odd width or of calls that fit in L2):
// 16-byte packs evict-first in L1 and L2 (see store_y); single elements
// plainly.
template <typename P>
__device__ __forceinline__ void store_stream(P* p, const P& v) {
  if constexpr (sizeof(P) == 16) {
    int4 bits;
    memcpy(&bits, &v, sizeof(P));
    __stcs(reinterpret_cast<int4*>(p), bits);
  } else {
    *p = v;
  }
}

// A 16-byte pack of y in aligned forward rows: plain when `plain` (calls
// larger than the L2: 0.2-1.2 % faster than evict-first at N = 512 - 65536,
// H100), else evict-first as store_stream. Two predicated stores, no branch (a
// branch per store cost the 64-register kernels spills). Rows of odd width keep
// store_stream (1.5 % slower plainly).
template <typename P>
__device__ __forceinline__ void store_y(P* p, const P& v, bool plain) {
  static_assert(sizeof(P) == 16, "16-byte packs");
  int4 bits;
  memcpy(&bits, &v, sizeof(P));
  asm volatile(
      "{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %5, 0;\n\t"
      "@q st.global.v4.s32 [%0], {%1, %2, %3, %4};\n\t"
      "@!q st.global.cs.v4.s32 [%0], {%1, %2, %3, %4};\n\t}" ::"l"(p),
      "r"(bits.x), "r"(bits.y), "r"(bits.z), "r"(bits.w), "r"(static_cast<int>(plain))
      : "memory");
}

// Weight and bias, which every row reads again: 16-byte packs (32 for float
// parameters of a 16-bit x) through the read-only cache, marked evict-last in
// L2 so that the stream of x and y does not push them out (H100: forwards
// 0.2-2 % faster, most at N >= 16384; torch.compile's kernels mark them the
// same way); single elements plainly.
template <bool kPredicated, typename P>
__device__ __forceinline__ P param_words(const P* p, bool pred) {
  static_assert(sizeof(P) % 16 == 0, "16-byte words");
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  int4 v[sizeof(P) / 16];
#pragma unroll
  for (int i = 0; i < static_cast<int>(sizeof(P) / 16); ++i) {
    const int4* word = reinterpret_cast<const int4*>(p) + i;
    if constexpr (kPredicated) {
      v[i] = make_int4(0, 0, 0, 0);
      asm("{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %4, 0;\n\t"
          "@q ld.global.nc.L2::cache_hint.v4.s32 {%0, %1, %2, %3}, [%5], %6;\n\t}"
          : "+r"(v[i].x), "+r"(v[i].y), "+r"(v[i].z), "+r"(v[i].w)
          : "r"(static_cast<int>(pred)), "l"(word), "l"(policy));
    } else {
      asm("ld.global.nc.L2::cache_hint.v4.s32 {%0, %1, %2, %3}, [%4], %5;"
          : "=r"(v[i].x), "=r"(v[i].y), "=r"(v[i].z), "=r"(v[i].w)
          : "l"(word), "l"(policy));
    }
  }
  P out;
  memcpy(&out, v, sizeof(P));
  return out;
}

template <typename P>
__device__ __forceinline__ P load_param(const P* p) {
  if constexpr (sizeof(P) % 16 == 0) {
    return param_words<false>(p, true);
  } else {
    return *p;
  }
}

// load_param where `pred` holds, else zeros; one predicated load, no branch:
// ptxas does not move a load in a branch above the code before it (weight
// loads meant to go out with x went out once x had arrived).
template <typename P>
__device__ __forceinline__ P load_param_if(const P* p, bool pred) {
  if constexpr (sizeof(P) % 16 == 0) {
    return param_words<true>(p, pred);
  } else {
    P out{};
    if (pred) {
      out = *p;
    }
    return out;
  }
}

// A 16-byte pack of x or dy through the read-only cache, with no L2 hint.
template <typename P>
__device__ __forceinline__ P load_row(const P* p) {
  static_assert(sizeof(P) == 16, "16-byte packs");
  const int4 v = __ldg(reinterpret_cast<const int4*>(p));
  P out;
  memcpy(&out, &v, sizeof(P));
  return out;
}

// Rows whose width is not a multiple of the pack ("spans", odd N): a row is
// read and written as the 16-byte packs of the whole tensor that cover it. It
// starts `shift` elements into its first pack; the edge packs hold elements of
// the neighbouring rows, which are masked out and never written. The tensor's
// last pack, which may run past its end, is read element by element (TailPack).
struct RowSpan {
  int64_t first; // the row's first pack, counted from the start of the tensor
  int shift;     // elements of that pack before the row
  int packs;     // packs covering the row
};

// kAlign > 1: the span starts at a multiple of kAlign packs (the shift is then
// below kAlign * kVec), so that its packs fill whole 32-byte sectors.
template <int kVec, int kAlign = 1>
__device__ __forceinline__ RowSpan row_span(int64_t row, int64_t cols) {
  const int64_t start = row * cols;
  if constexpr (kAlign == 1) {
    const int shift = static_cast<int>(start % kVec);
    return {start / kVec, shift, static_cast<int>((shift + cols + kVec - 1) / kVec)};
  } else {
    const int64_t first = start / (kVec * kAlign) * kAlign;
    const int shift = static_cast<int>(start - first * kVec);
    return {first, shift, static_cast<int>((shift + cols + kVec - 1) / kVec)};
  }
}

// Pack q of a parameter of `cols` elements: load_param when the pack lies
// inside it, else the elements before `cols` one at a time (zeros after).
template <typename P>
__device__ __forceinline__ P load_param_within(const P* packs, int q, int cols) {
  constexpr int kN = P::kSize;
  if ((q + 1) * kN <= cols) {
    return load_param(packs + q);
  }
  P out;
  out.load_elems(reinterpret_cast<const typename P::elem_t*>(packs + q), cols - q * kN);
  return out;
}

// The tensor's last pack when it runs past the tensor's end (N * rows not a
// multiple of kVec): its index within the row's slice of span packs starting
// at pack0 (-1 in every row but the last) and its elements inside the tensor.
// That pack is read one element at a time (RawPack::load_elems), so no load
// leaves the tensor, whose end may be the end of an allocation (exact-size
// allocations, DLPack, another framework's memory).
struct TailPack {
  int index;
  int elems;
};

template <int kVec>
__device__ __forceinline__ TailPack tail_pack(int64_t row, int64_t rows, int64_t cols, const RowSpan& span, int pack0) {
  const int elems = static_cast<int>(rows * cols % kVec);
  return {row == rows - 1 && elems != 0 ? span.packs - 1 - pack0 : -1, elems};
}

// Columns c0 .. c0 + kN - 1 of a parameter of `cols` elements (16-byte aligned,
// c0 > -kN) as one pack: one or two aligned loads and a shift, none past the
// parameter's end. Elements outside [0, cols) are undefined (the caller masks
// them with keep).
template <typename P>
__device__ __forceinline__ P load_span_param(const P* packs, int c0, int cols) {
  constexpr int kN = P::kSize;
  const int last = (cols - 1) / kN;
  const int q = c0 >= 0 ? c0 / kN : -1;
  const int sh = c0 - q * kN;
  const P lo = load_param_within(packs, min(max(q, 0), last), cols);
  if (sh == 0) {
    return lo;
  }
  return P::shifted(lo, load_param_within(packs, min(q + 1, last), cols), sh);
}

// Writes elements [lo, hi) of an edge pack of a span one at a time; out of line,
// since only the threads holding a row's first or last pack take it.
template <typename P>
__device__ __noinline__ void store_span_edge(typename P::elem_t* dst, P pack, int lo, int hi) {
  pack.store_elems(dst, lo, hi);
}

// How group_combine and row_reduce combine a lane's values with its partner's
// (`o`): plain sums. add() takes one more entry into an accumulator that holds
// `taken`; count_scale(k) is told when each accumulator holds k entries.
struct SumCombine {
  template <int kN, typename U>
  __device__ __forceinline__ void operator()(U (&v)[kN], const U (&o)[kN]) const {
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      v[i] += o[i];
    }
  }
  template <int kN, typename U>
  __device__ __forceinline__ void add(U (&v)[kN], const U (&o)[kN], int /*taken*/) const {
    (*this)(v, o);
  }
  __device__ __forceinline__ void count_scale(int /*entries*/) const {}
};

// Combines kN values over `width` consecutive lanes (a power of two <= 32) by
// butterfly. The order is fixed, so the result is bitwise reproducible, and the
// same on every lane for a combine symmetric in its two sides.
template <int kN, typename U, typename Combine>
__device__ __forceinline__ void group_combine(U (&v)[kN], int width, Combine& combine) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    if (offset < width) {
      U o[kN];
#pragma unroll
      for (int i = 0; i < kN; ++i) {
        o[i] = __shfl_xor_sync(0xffffffffu, v[i], offset);
      }
      combine(v, o);
    }
  }
}

// Sum over `width` consecutive lanes (a power of two <= 32).
template <typename U>
__device__ __forceinline__ U group_sum(U v, int width) {
  U a[1] = {v};
  SumCombine sum;
  group_combine(a, width, sum);
  return a[0];
}

// Two sums carried together.
template <typename U>
struct Pair {
  U a;
  U b;
};

// Two sums over a row group of `threads_per_row` threads (a power of two;
// groups wider than a warp are whole warps, several groups may share a block):
// warp butterflies, then the warp sums through shared memory, added by a
// butterfly over the row's warps (a fixed order). Every thread of the block
// must call it.
template <typename U>
__device__ __forceinline__ Pair<U> row_sum2(Pair<U> v, int threads_per_row, U* scratch /* [64] */) {
  if (threads_per_row <= 32) {
    return {group_sum(v.a, threads_per_row), group_sum(v.b, threads_per_row)};
  }
  v.a = group_sum(v.a, 32);
  v.b = group_sum(v.b, 32);
  const int warp = threadIdx.x >> 5;
  if ((threadIdx.x & 31) == 0) {
    scratch[warp] = v.a;
    scratch[32 + warp] = v.b;
  }
  __syncthreads();
  // Each group of warps_per_group lanes reads all of the row's warp sums: log2
  // steps instead of a loop over them (the same bits on every lane). H100,
  // few-row backward at 16 warps a row (fp32 1x4096): 2.5 -> 2.3 us.
  const int warps_per_group = threads_per_row >> 5;
  const int entry = (warp & ~(warps_per_group - 1)) + (threadIdx.x & (warps_per_group - 1));
  Pair<U> total{group_sum(scratch[entry], warps_per_group), group_sum(scratch[32 + entry], warps_per_group)};
  __syncthreads();
  return total;
}

// log2 of a power of two (threads per row, warps per row): shifts instead of
// divisions, whose ~20 dependent instructions (MUFU.RCP and fix-ups) ran ahead
// of the first loads' addresses in the few-row backward.
__device__ __forceinline__ int log2_pow2(int v) {
  return __ffs(v) - 1;
}

__device__ __forceinline__ float rsqrt_acc(float v) {
  return rsqrtf(v);
}
__device__ __forceinline__ double rsqrt_acc(double v) {
  return rsqrt(v);
}

inline bool is_aligned(const void* p, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

inline int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) {
    p <<= 1;
  }
  return p;
}

// How a row of `num_packs` packs is spread over threads: `threads_per_row`
// threads (a power of two) each holding `packs_per_thread` packs in registers.
struct RowConfig {
  int threads_per_row;
  int packs_per_thread;
};

// Spreads `num_packs` over at most `max_threads` threads with about
// `target_packs` packs each; packs_per_thread is a power of two.
inline RowConfig choose_row_config(int64_t num_packs, int64_t target_packs, int64_t max_threads) {
  const int64_t tpr = std::min<int64_t>(next_pow2((num_packs + target_packs - 1) / target_packs), max_threads);
  const int64_t ppt = next_pow2((num_packs + tpr - 1) / tpr);
  return {static_cast<int>(tpr), static_cast<int>(ppt)};
}

// Calls f(std::integral_constant<int, P>) for the runtime value p in {1,2,4,8}.
template <typename F>
void packs_switch(int p, F&& f) {
  switch (p) {
    case 1:
      f(std::integral_constant<int, 1>{});
      break;
    case 2:
      f(std::integral_constant<int, 2>{});
      break;
    case 4:
      f(std::integral_constant<int, 4>{});
      break;
    case 8:
      f(std::integral_constant<int, 8>{});
      break;
    default:
      TORCH_CHECK(false, "reference_ops: internal error, unsupported packs per thread ", p);
  }
}

// Runs `f` with the runtime flag `cond` as the compile-time constant `kName`
// (one instantiation for each value).
#define BOOL_SWITCH(cond, kName, ...) \
  [&] {                               \
    if (cond) {                       \
      constexpr bool kName = true;    \
      return __VA_ARGS__();           \
    }                                 \
    constexpr bool kName = false;     \
    return __VA_ARGS__();             \
  }()

// Number of blocks that keep every SM busy for a kernel with this block size.
template <typename Kernel>
int64_t resident_blocks(Kernel kernel, int block_threads, size_t smem_bytes) {
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block_threads, smem_bytes));
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  return static_cast<int64_t>(std::max(per_sm, 1)) * sms;
}

// -----------------------------------------------------------------------------
// Staged rows: cp.async copies into shared memory, several rows ahead
// -----------------------------------------------------------------------------

// cp.async needs sm_80; thread-block clusters and distributed shared memory
// sm_90.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define REFERENCE_OPS_CP_ASYNC 1
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define REFERENCE_OPS_CLUSTERS 1
#endif

// Copies 16 bytes global -> shared without passing through registers: the
// first `src_bytes` (0..16) from gmem, the rest zero-filled.
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, int src_bytes) {
#ifdef REFERENCE_OPS_CP_ASYNC
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_bytes));
#else
  unsigned char* d = static_cast<unsigned char*>(smem);
  for (int i = 0; i < 16; ++i) {
    d[i] = i < src_bytes ? static_cast<const unsigned char*>(gmem)[i] : 0;
  }
#endif
}

// Same for one 4- or 8-byte value (row statistics).
template <int kBytes>
__device__ __forceinline__ void cp_async_small(void* smem, const void* gmem, bool valid) {
  static_assert(kBytes == 4 || kBytes == 8, "cp.async.ca copies 4, 8 or 16 bytes");
#ifdef REFERENCE_OPS_CP_ASYNC
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile(
      "cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(gmem), "n"(kBytes), "r"(valid ? kBytes : 0));
#else
  using V = std::conditional_t<kBytes == 4, unsigned, unsigned long long>;
  *static_cast<V*>(smem) = valid ? *static_cast<const V*>(gmem) : V(0);
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#ifdef REFERENCE_OPS_CP_ASYNC
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most `pending` of this thread's committed groups are in flight
// (0..3; the operand must be an immediate). Only the issuing thread sees the
// data.
__device__ __forceinline__ void cp_async_wait(int pending) {
#ifdef REFERENCE_OPS_CP_ASYNC
  switch (pending) {
    case 0:
      asm volatile("cp.async.wait_group 0;\n" ::: "memory");
      break;
    case 1:
      asm volatile("cp.async.wait_group 1;\n" ::: "memory");
      break;
    case 2:
      asm volatile("cp.async.wait_group 2;\n" ::: "memory");
      break;
    default:
      asm volatile("cp.async.wait_group 3;\n" ::: "memory");
      break;
  }
#endif
}

// Rows split over the CTAs of a thread-block cluster (1 = no cluster).
__device__ __forceinline__ unsigned cluster_rank() {
#ifdef REFERENCE_OPS_CLUSTERS
  return cooperative_groups::this_cluster().block_rank();
#else
  return 0;
#endif
}

// The dynamic shared memory of a staged kernel (one declaration for every
// kernel).
__device__ __forceinline__ unsigned char* dynamic_smem() {
  extern __shared__ __align__(128) unsigned char staged_smem[];
  return staged_smem;
}

// Largest cluster the kernels use (8 is portable).
constexpr int kMaxClusterSize = 8;

// Scratch for row_reduce: two slots (alternating, so one barrier per reduction
// suffices) of kN values x the warps of a row (at most kWarps: a CTA's, or a
// cluster's); with a cluster, one mbarrier per slot.
template <typename U, int kN, int kWarps>
struct ReduceScratch {
  U v[2][kN][kWarps];
  unsigned long long bar[2];
};

#ifdef REFERENCE_OPS_CLUSTERS
__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Writes v to `local`'s counterpart in CTA `rank` of the cluster and counts
// its bytes on that CTA's mbarrier at `bar` (st.async: no memory fence).
template <typename U>
__device__ __forceinline__ void store_to_peer(U* local, U v, const unsigned long long* bar, unsigned rank) {
  unsigned addr;
  unsigned remote_bar;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(addr) : "r"(smem_address(local)), "r"(rank));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote_bar) : "r"(smem_address(bar)), "r"(rank));
  if constexpr (sizeof(U) == 4) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(addr),
                 "r"(__float_as_uint(v)), "r"(remote_bar)
                 : "memory");
  } else {
    static_assert(sizeof(U) == 8, "row sums are float or double");
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];" ::"r"(addr),
                 "l"(__double_as_longlong(v)), "r"(remote_bar)
                 : "memory");
  }
}

// Blocks until the phase of the mbarrier at `bar` with this parity completes.
__device__ __forceinline__ void mbarrier_wait(const unsigned long long* bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done)
                 : "r"(smem_address(bar)), "r"(parity)
                 : "memory");
  } while (done == 0);
}
#endif

// Before the first row_reduce over a cluster (every thread of every CTA calls
// it): the mbarriers of the scratch, initialised, then a cluster barrier so no
// peer writes to them earlier. Its arrival is relaxed (the mbarrier_init fence
// orders the initialisation): a release arrival waits for the thread's loads
// in flight, the row's x (ncu, H100: a membar stall of 3 of the 18 cycles
// between issues of the fp32 N = 32768 forward).
template <typename U, int kN, int kWarps>
__device__ __forceinline__ void row_reduce_init(ReduceScratch<U, kN, kWarps>& scratch, int cluster) {
#ifdef REFERENCE_OPS_CLUSTERS
  if (cluster > 1) {
    if (threadIdx.x == 0) {
      for (int i = 0; i < 2; ++i) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_address(&scratch.bar[i])) : "memory");
      }
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
  }
#endif
}

// {sum, M2} of x over equal counts n (M2 = sum (x - sum / n)^2): the pair of
// two halves gives the whole's (Chan, Golub & LeVeque 1983), M2 = M2a + M2b +
// (sum_a - sum_b)^2 / (2n), as exact as the two-pass sums and one reduction
// instead of two. half_inv_n = 1 / (2n) at the current level; every step
// doubles n. Symmetric in a and b, bit for bit, so every lane of a butterfly
// ends with the same bits.
template <typename U>
struct MomentsCombine {
  U half_inv_n;
  __device__ __forceinline__ void operator()(U (&v)[2], const U (&o)[2]) {
    const U d = v[0] - o[0];
    v[1] = (v[1] + o[1]) + d * d * half_inv_n;
    v[0] += o[0];
    half_inv_n *= U(0.5);
  }
  // v holds `taken` entries of n elements (zeros when none), o one more: M2
  // gains (sum_v - taken * sum_o)^2 / (taken * (taken + 1) * n).
  __device__ __forceinline__ void add(U (&v)[2], const U (&o)[2], int taken) const {
    const U k = static_cast<U>(taken);
    const U d = v[0] - k * o[0];
    const U f = taken > 0 ? U(2) * half_inv_n / (k * (k + U(1))) : U(0);
    v[1] = (v[1] + o[1]) + d * d * f;
    v[0] += o[0];
  }
  __device__ __forceinline__ void count_scale(int entries) {
    half_inv_n /= static_cast<U>(entries);
  }
};

// Sums kN values over a row group of `threads_per_row` threads (a power of two;
// groups wider than a warp are whole warps) and over the `cluster` CTAs that
// share a row (then one group per CTA). Every warp sum goes to shared memory:
// the CTA's, after which one barrier suffices, or, with a cluster, every CTA's
// (st.async, counted on each CTA's mbarrier: a cluster barrier would wait for
// the CTA's outstanding global stores, a memory fence). Then every warp adds
// all of its row's warp sums, lane l taking entries l, l + 32, ... in
// rank-major order, and a butterfly: a fixed order, so the result is bitwise
// identical on every thread and every run. Every thread of every CTA of the
// cluster must call it, the same number of times; `calls` counts the calls
// (slot and mbarrier phase).
template <int kN, typename U, int kWarps, typename Combine = SumCombine>
__device__ __forceinline__ void row_reduce(
    U (&v)[kN],
    int threads_per_row,
    int cluster,
    ReduceScratch<U, kN, kWarps>& scratch,
    int& calls,
    Combine combine = {}) {
  const int slot = calls & 1;
  ++calls;
  if (threads_per_row <= 32 && cluster == 1) {
    group_combine(v, threads_per_row, combine);
    return;
  }
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int warps_per_row = threads_per_row >> 5;
  group_combine(v, 32, combine);
  int first = warp & ~(warps_per_row - 1);
  int entries = warps_per_row;
#ifdef REFERENCE_OPS_CLUSTERS
  if (cluster > 1) {
    // One row per CTA: its warps are the row's warps in this CTA.
    const int entry = static_cast<int>(cluster_rank()) * warps_per_row + warp;
    const unsigned long long* bar = &scratch.bar[slot];
    if (threadIdx.x == 0) {
      const unsigned bytes = static_cast<unsigned>(cluster * warps_per_row * kN * sizeof(U));
      asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}" ::"r"(
                       smem_address(bar)),
                   "r"(bytes)
                   : "memory");
    }
    if (lane < cluster) {
#pragma unroll
      for (int i = 0; i < kN; ++i) {
        store_to_peer(&scratch.v[slot][i][entry], v[i], bar, static_cast<unsigned>(lane));
      }
    }
    // Slot `slot` serves every other call: its phase parity flips every two.
    mbarrier_wait(bar, static_cast<unsigned>((calls - 1) >> 1) & 1u);
    first = 0;
    entries = cluster * warps_per_row;
  } else
#endif
  {
    if (lane == 0) {
#pragma unroll
      for (int i = 0; i < kN; ++i) {
        scratch.v[slot][i][warp] = v[i];
      }
    }
    __syncthreads();
  }
  if (entries <= 32) {
    // Every group of `entries` lanes (a power of two) reads all the entries:
    // log2(entries) butterfly steps instead of 5 over lanes mostly zero.
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      v[i] = scratch.v[slot][i][first + (lane & (entries - 1))];
    }
    group_combine(v, entries, combine);
    return;
  }
  // Lane l takes entries l, l + 32, ... in turn (entries is a multiple of 32).
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    v[i] = U(0);
  }
  for (int e = lane, taken = 0; e < entries; e += 32, ++taken) {
    U o[kN];
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      o[i] = scratch.v[slot][i][first + e];
    }
    combine.add(v, o, taken);
  }
  combine.count_scale(entries / 32);
  group_combine(v, 32, combine);
}

// The launch shape of a staged kernel: CTAs of `threads_per_row * groups`
// threads, `cluster` CTAs sharing each row (each a slice of `slice_packs`
// packs), `stages` rows per group staged ahead in shared memory.
struct StagedConfig {
  int threads_per_row = 1;
  int groups = 1;
  int cluster = 1;
  int stages = 1;
  int64_t slice_packs = 0;
  size_t smem_bytes = 0;
  int threads() const {
    return threads_per_row * groups;
  }
};

// Largest cluster the device runs (8 is portable; none before sm_90).
inline int max_cluster_size() {
  return at::cuda::getCurrentDeviceProperties()->major >= 9 ? kMaxClusterSize : 1;
}

// Shared memory one CTA may use (opt-in limit), less a margin for static
// arrays (row_reduce's scratch: up to 4 KiB).
inline size_t smem_budget() {
  return at::cuda::getCurrentDeviceProperties()->sharedMemPerBlockOptin - 8192;
}

// Dynamic shared memory each CTA of `kernel` may take while the SM still holds
// as many of its `threads`-thread CTAs as its registers allow.
template <typename Kernel>
int64_t smem_share_per_cta(Kernel kernel, int threads) {
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  cudaFuncAttributes attr{};
  C10_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  const cudaDeviceProp* prop = at::cuda::getCurrentDeviceProperties();
  const int64_t per_cta = static_cast<int64_t>(prop->sharedMemPerMultiprocessor) / std::max(per_sm, 1) -
                          static_cast<int64_t>(prop->reservedSharedMemPerBlock) -
                          static_cast<int64_t>(attr.sharedSizeBytes);
  return std::max<int64_t>(per_cta, 0);
}

// How many clusters of `kernel` (with cfg's shape) are resident at once, after
// raising the kernel's dynamic shared memory limit to cfg.smem_bytes.
template <typename Kernel>
int64_t resident_clusters(Kernel kernel, const StagedConfig& cfg) {
  C10_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(cfg.smem_bytes)));
  int64_t resident = 0;
  if (cfg.cluster > 1) {
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cfg.cluster;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    config.attrs = attr;
    config.numAttrs = 1;
    config.gridDim = dim3(cfg.cluster);
    config.blockDim = dim3(cfg.threads());
    config.dynamicSmemBytes = cfg.smem_bytes;
    int clusters = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
    resident = clusters;
  } else {
    int per_sm = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, cfg.threads(), cfg.smem_bytes));
    resident = static_cast<int64_t>(per_sm) * at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  }
  TORCH_CHECK(
      resident > 0, "reference_ops: internal error, a ", cfg.threads(), "-thread CTA with ", cfg.smem_bytes,
      " bytes of shared memory does not fit on this GPU");
  return resident;
}

// Launches `clusters` clusters of `kernel` (a persistent grid) on the current
// stream.
template <typename Kernel, typename... Args>
void launch_staged(Kernel kernel, const StagedConfig& cfg, int64_t clusters, Args... args) {
  cudaLaunchConfig_t config = {};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cfg.cluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  config.attrs = attr;
  config.numAttrs = cfg.cluster > 1 ? 1 : 0;
  config.gridDim = dim3(static_cast<unsigned>(clusters * cfg.cluster));
  config.blockDim = dim3(cfg.threads());
  config.dynamicSmemBytes = cfg.smem_bytes;
  config.stream = at::cuda::getCurrentCUDAStream();
  C10_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

} // namespace cuda
} // namespace reference_ops
