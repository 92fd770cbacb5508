// Device primitives of the kernels: packs of elements moved by one instruction, the cached and
// streaming loads and stores, rows whose width is not a multiple of the pack (spans), and the
// asynchronous copies into shared memory (cp.async) of the staged kernels.
#pragma once

#include <ATen/OpMathType.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "norm_plan.h"

namespace reference_ops {
namespace cuda {

// N elements of T stored together so one instruction moves them. T is any element type here (the
// kernels' scalar_t, weight_t, residual_t or out_t), as in RawPack below.
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
// larger than the L2, where evict-first only costs), else evict-first as
// store_stream. Two predicated stores, no branch (a branch per store costs the
// 64-register kernels spills). Rows of odd width keep store_stream.
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
// L2 so that the stream of x and y does not push them out (torch.compile's
// kernels mark them the same way); single elements plainly.
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
  int64_t first;  // the row's first pack, counted from the start of the tensor
  int shift;      // elements of that pack before the row
  int packs;      // packs covering the row
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

// The tensor's last pack when it runs past the tensor's end (rows * cols not a multiple of kVec):
// its index among the `packs` packs that start at pack `first` of the tensor (-1 where it is not
// one of them), and its elements inside the tensor. Rows narrower than a pack share that pack, so
// any row may hold it, not only the last. It is read one element at a time
// (RawPack::load_elems), so no load leaves the tensor, whose end may be the end of an allocation
// (exact-size allocations, DLPack, another framework's memory).
struct TailPack {
  int index;
  int elems;
};

template <int kVec>
__device__ __forceinline__ TailPack tail_pack(int64_t first, int packs, int64_t tensor_elems) {
  const int elems = static_cast<int>(tensor_elems % kVec);
  const int64_t index = tensor_elems / kVec - first;
  return {elems != 0 && index >= 0 && index < packs ? static_cast<int>(index) : -1, elems};
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

// log2 of a power of two (threads per row, warps per row): shifts instead of
// divisions, whose ~20 dependent instructions (MUFU.RCP and fix-ups) ran ahead
// of the first loads' addresses in the few-row backward.
__device__ __forceinline__ int log2_pow2(int v) { return __ffs(v) - 1; }

__device__ __forceinline__ float rsqrt_acc(float v) { return rsqrtf(v); }
__device__ __forceinline__ double rsqrt_acc(double v) { return rsqrt(v); }

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
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(gmem), "n"(kBytes),
               "r"(valid ? kBytes : 0));
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

}  // namespace cuda
}  // namespace reference_ops
