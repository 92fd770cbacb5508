// Reductions of the kernels: deterministic butterflies over the lanes of a warp, sums over the
// warps of a row through shared memory, and over the CTAs of a thread-block cluster through
// distributed shared memory. Every order is fixed, so results are bitwise reproducible.
#pragma once

#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "pack.cuh"

namespace reference_ops {
namespace cuda {

// The most warps of a CTA (and of a row without a cluster).
constexpr int kMaxWarps = kMaxThreadsPerRow / kWarpSize;

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

// Combines kN values over `width` consecutive lanes (a power of two <= kWarpSize) by
// butterfly. The order is fixed, so the result is bitwise reproducible, and the
// same on every lane for a combine symmetric in its two sides.
template <int kN, typename U, typename Combine>
__device__ __forceinline__ void group_combine(U (&v)[kN], int width, Combine& combine) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) {
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

// Sum over `width` consecutive lanes (a power of two <= kWarpSize).
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
__device__ __forceinline__ Pair<U> row_sum2(Pair<U> v, int threads_per_row, U* scratch /* [2 * kMaxWarps] */) {
  if (threads_per_row <= kWarpSize) {
    return {group_sum(v.a, threads_per_row), group_sum(v.b, threads_per_row)};
  }
  v.a = group_sum(v.a, kWarpSize);
  v.b = group_sum(v.b, kWarpSize);
  const int warp = threadIdx.x >> kLog2WarpSize;
  if ((threadIdx.x & (kWarpSize - 1)) == 0) {
    scratch[warp] = v.a;
    scratch[kMaxWarps + warp] = v.b;
  }
  __syncthreads();
  // Each group of warps_per_group lanes reads all of the row's warp sums: log2
  // steps instead of a loop over them (the same bits on every lane).
  const int warps_per_group = threads_per_row >> kLog2WarpSize;
  const int entry = (warp & ~(warps_per_group - 1)) + (threadIdx.x & (warps_per_group - 1));
  Pair<U> total{group_sum(scratch[entry], warps_per_group), group_sum(scratch[kMaxWarps + entry], warps_per_group)};
  __syncthreads();
  return total;
}

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
// in flight, the row's x, which would stall every thread until they arrived.
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
  __device__ __forceinline__ void count_scale(int entries) { half_inv_n /= static_cast<U>(entries); }
};

// Sums kN values over a row group of `threads_per_row` threads (a power of two;
// groups wider than a warp are whole warps) and over the `cluster` CTAs that
// share a row (then one group per CTA). Every warp sum goes to shared memory:
// the CTA's, after which one barrier suffices, or, with a cluster, every CTA's
// (st.async, counted on each CTA's mbarrier: a cluster barrier would wait for
// the CTA's outstanding global stores, a memory fence). Then every warp adds
// all of its row's warp sums, lane l taking entries l, l + kWarpSize, ... in
// rank-major order, and a butterfly: a fixed order, so the result is bitwise
// identical on every thread and every run. Every thread of every CTA of the
// cluster must call it, the same number of times; `calls` counts the calls
// (slot and mbarrier phase).
template <int kN, typename U, int kWarps, typename Combine = SumCombine>
__device__ __forceinline__ void row_reduce(U (&v)[kN], int threads_per_row, int cluster,
                                           ReduceScratch<U, kN, kWarps>& scratch, int& calls, Combine combine = {}) {
  const int slot = calls & 1;
  ++calls;
  if (threads_per_row <= kWarpSize && cluster == 1) {
    group_combine(v, threads_per_row, combine);
    return;
  }
  const int warp = threadIdx.x >> kLog2WarpSize;
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int warps_per_row = threads_per_row >> kLog2WarpSize;
  group_combine(v, kWarpSize, combine);
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
  if (entries <= kWarpSize) {
    // Every group of `entries` lanes (a power of two) reads all the entries:
    // log2(entries) butterfly steps instead of 5 over lanes mostly zero.
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      v[i] = scratch.v[slot][i][first + (lane & (entries - 1))];
    }
    group_combine(v, entries, combine);
    return;
  }
  // Lane l takes entries l, l + kWarpSize, ... in turn (entries is a multiple of kWarpSize).
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    v[i] = U(0);
  }
  for (int e = lane, taken = 0; e < entries; e += kWarpSize, ++taken) {
    U o[kN];
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      o[i] = scratch.v[slot][i][first + e];
    }
    combine.add(v, o, taken);
  }
  combine.count_scale(entries / kWarpSize);
  group_combine(v, kWarpSize, combine);
}

// A CTA's column sums as one partial row each of kN sums (dweight's, dbias'): each of the CTA's
// `groups` row groups holds its sums of its threads' columns (acc(i, p, e): sum i, element e of slot
// p, the pack lane + p * group_threads of a row of num_packs packs); they are added in a fixed order
// (group 0, 1, ...) through `staging` (shared memory of kN * groups * num_packs packs, 16-byte
// aligned) and written to outs[i] (skipped where null) as packs. One group writes its sums
// directly. Every sum is staged before any is added, so the registers of all of them are free
// before the adds. Every thread of the CTA calls it; the staging may be used again after.
template <int kN, int kPacks, int kVec, typename acc_t, typename Acc>
__device__ __forceinline__ void write_cta_column_sums(acc_t* const (&outs)[kN], acc_t* staging, int lane, int group,
                                                      int groups, int group_threads, int64_t num_packs, Acc&& acc) {
  const int64_t cols = num_packs * kVec;
  if (groups > 1) {
    __syncthreads();  // the staging's readers of an earlier call are done
  }
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    if (outs[i] == nullptr) {
      continue;
    }
    acc_t* const mine = groups == 1 ? outs[i] : staging + (static_cast<int64_t>(i) * groups + group) * cols;
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int64_t idx = lane + static_cast<int64_t>(p) * group_threads;
      if (idx < num_packs) {
        Pack<acc_t, kVec> v;
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          v.v[e] = acc(i, p, e);
        }
        store_pack<acc_t, kVec>(mine, idx, v);
      }
    }
  }
  if (groups == 1) {
    return;
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    if (outs[i] == nullptr) {
      continue;
    }
    const acc_t* const sums = staging + static_cast<int64_t>(i) * groups * cols;
    for (int64_t k = threadIdx.x; k < num_packs; k += blockDim.x) {
      Pack<acc_t, kVec> s = load_pack<acc_t, kVec>(sums, k);
      for (int g = 1; g < groups; ++g) {
        const Pack<acc_t, kVec> q = load_pack<acc_t, kVec>(sums + static_cast<int64_t>(g) * cols, k);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          s.v[e] += q.v[e];
        }
      }
      store_pack<acc_t, kVec>(outs[i], k, s);
    }
  }
}

// out[c] = sum over p of part[p][c], in a fixed order (slices, then the tile).
// blockIdx.y picks the (part, out) pair: 0 -> dweight, 1 -> dbias, one launch
// for both. Each thread reads kV adjacent columns with one load (16 bytes when
// N allows: a quarter of the load instructions, four times the bytes in
// flight); the per-column order, hence every bit of the sum, does not depend
// on kV.
template <typename acc_t, typename weight_t, int kV>
__global__ void column_sum_kernel(const acc_t* __restrict__ part0, weight_t* __restrict__ out0,
                                  const acc_t* __restrict__ part1, weight_t* __restrict__ out1, int64_t parts,
                                  int64_t cols) {
  constexpr int kTileCols = kSumCols * kV;
  __shared__ acc_t tile[kSumSlices][kTileCols + 1];
  const acc_t* __restrict__ part = blockIdx.y == 0 ? part0 : part1;
  weight_t* __restrict__ out = blockIdx.y == 0 ? out0 : out1;
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kTileCols;
  const int64_t c = c0 + static_cast<int64_t>(threadIdx.x) * kV;
  Pack<acc_t, kV> v;
#pragma unroll
  for (int i = 0; i < kV; ++i) {
    v.v[i] = acc_t(0);
  }
  // cols is a multiple of kV: a pack is in the row or wholly past it.
  if (c < cols) {
#pragma unroll 8
    for (int64_t p = threadIdx.y; p < parts; p += kSumSlices) {
      const Pack<acc_t, kV> q = load_pack<acc_t, kV>(part + p * cols + c, 0);
#pragma unroll
      for (int i = 0; i < kV; ++i) {
        v.v[i] += q.v[i];
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kV; ++i) {
    tile[threadIdx.y][threadIdx.x * kV + i] = v.v[i];
  }
  __syncthreads();
  // The tile's columns, one per thread, over the first kV rows of threads.
  const int t = threadIdx.y * kSumCols + threadIdx.x;
  if (t < kTileCols && c0 + t < cols) {
    acc_t s = acc_t(0);
#pragma unroll
    for (int i = 0; i < kSumSlices; ++i) {
      s += tile[i][t];
    }
    out[c0 + t] = static_cast<weight_t>(s);
  }
}

// Adds `parts` partial rows of part0 into out0 and, when out1 is set, of part1 into out1 (one
// launch for both) with column_sum_kernel; sum_vec (column_sum_vec, norm_plan.h) is 1 or the
// 16-byte pack of acc_t.
template <typename acc_t, typename weight_t>
void launch_column_sums(const acc_t* part0, weight_t* out0, const acc_t* part1, weight_t* out1, int64_t parts,
                        int64_t cols, int sum_vec, cudaStream_t stream) {
  constexpr int kV = kPackBytes / sizeof(acc_t);
  const dim3 block(kSumCols, kSumSlices);
  const dim3 grid(static_cast<unsigned>(ceil_div(cols, kSumCols * sum_vec)), out1 != nullptr ? 2 : 1);
  if (sum_vec == kV) {
    column_sum_kernel<acc_t, weight_t, kV><<<grid, block, 0, stream>>>(part0, out0, part1, out1, parts, cols);
  } else {
    column_sum_kernel<acc_t, weight_t, 1><<<grid, block, 0, stream>>>(part0, out0, part1, out1, parts, cols);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace cuda
}  // namespace reference_ops
