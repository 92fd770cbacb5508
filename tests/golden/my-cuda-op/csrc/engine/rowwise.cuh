// The rowwise engine: CUDA kernels for any op that reduces each row of its inputs and writes an
// output per element and/or per row, given as a row functor. It knows no op's math: an op's
// csrc/ops/<op>.h defines the functors, and its csrc/ops/<op>.cu registers them
// (register_kernels<rowwise::Cuda, Forward, Backward>, op.h), which checks each call, makes its
// outputs and calls Cuda::run below.
//
// A row op is a struct template on acc_t (float for float16/bfloat16/float32, double for float64),
// whose fields are the op's scalar parameters, in the declaration's order (ops/<op>.py), built as
// Op<acc_t>{params...}:
//
//   template <typename acc_t>
//   struct LogSumExp {                           // out_row = log(sum(exp(x))) over each row
//     static constexpr int kInputs = 1;          // tensors read per element, shaped like x (1-3)
//     static constexpr int kRowInputs = 0;       // tensors read per row, shape x.shape[:-1] (0-2; optional)
//     static constexpr int kOutputs = 0;         // tensors written per element, shaped like x (0-2)
//     static constexpr int kRowOutputs = 1;      // values written per row, shape x.shape[:-1] (0-2)
//     static constexpr int kPasses = 2;          // reductions over the row, one after another (0 or more)
//     static constexpr bool kKeepTerm = false;   // see outputs() below (optional)
//     static constexpr bool kOnline = false;     // see rescale() below (optional)
//     struct Sums { acc_t value; };              // what a pass reduces: a struct of acc_t fields
//     struct Row { acc_t max, sum; };            // what the passes found, for the later ones and the outputs
//     C10_HOST_DEVICE Sums identity(int pass) const { return {pass == 0 ? -inf : acc_t(0)}; }
//     C10_HOST_DEVICE Sums term(int pass, const acc_t* in, const Row& row) const {   // one element's
//       return {pass == 0 ? in[0] : exp(in[0] - row.max)};
//     }
//     C10_HOST_DEVICE Sums combine(int pass, const Sums& a, const Sums& b) const {   // two partials
//       return {pass == 0 ? fmax(a.value, b.value) : a.value + b.value};
//     }
//     C10_HOST_DEVICE void finish(int pass, const Sums& total, int64_t cols, Row& row) const {
//       if (pass == 0) row.max = total.value; else row.sum = total.value;
//     }
//     C10_HOST_DEVICE void row_outputs(const Row& row, acc_t* out) const { out[0] = row.max + log(row.sum); }
//   };
//
// - Pass p reduces identity(p) and term(p, in, row) of every element of the row by combine(p, ...)
//   (in any order and grouping: combine must be associative and commutative, identity neutral),
//   then finish(p, total, cols, row) records what it found in `row` for the passes after it and the
//   outputs. in[i] is element j of input i's row, as acc_t. `row` starts value-initialised; an op
//   with per-row inputs gets them first, by start(const acc_t* row_in, Row& row).
// - outputs(in, row, out) (when kOutputs > 0) writes out[m], element j of output m. With kKeepTerm,
//   in[0] there is not the input but the first value of term(kPasses - 1, in, row), which the last
//   pass computed (softmax: exp(z - max)); the engine keeps it from that pass or computes it again,
//   whichever the dtype makes faster.
// - row_outputs(row, out) (when kRowOutputs > 0) writes out[m], the row's value of row output m.
// - kOnline (two passes whose second depends on the first only through a rescaling, as softmax's
//   sum of exp(z - max) on its maximum): rows too wide for registers are then read once for both
//   passes, not once a pass. finish(0, ...) of a partial result is then a valid row for pass 1's
//   terms, and rescale(const Row& from, const Row& to, const Sums& sums) turns pass-1 sums taken
//   under `from` into those under `to` (softmax: times exp(from.max - to.max)).
// - The members are pure C10_HOST_DEVICE functions (the engine may call term on zeros and drop
//   the result): the CPU engine (rowwise_cpu.h) runs the same functor.
//
// rowwise_plan.h decides the launch (plan_rows); this file asks the GPU its facts, and builds and
// launches the planned kernel on the current CUDA stream.
//
// Rows move in 16-byte packs (one LDG.128 / STG.128 per thread) at any width: the few elements
// before a row's first 16-byte boundary and after its last (a width that is not a multiple of the
// pack, so rows start mid-pack) move one per thread, so no access leaves the row and no pack is
// partial. When the tensors' rows start at different offsets within a pack (a view that starts at
// an odd element), everything moves element by element.
#pragma once

#include <cooperative_groups.h>
#include <cuda_pipeline.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <utility>

#include "engine/gpu.h"
#include "engine/rowwise_op.h"
#include "engine/rowwise_plan.h"

namespace cuop_my_cuda_op::rowwise {

// ---------------------------------------------------------------------------------------------
// Passes and kept terms.

// Calls fn(std::integral_constant<int, p>) for p = 0 ... kCount - 1: each pass's code is built
// separately, so the op's `pass == 0` tests fold away.
template <typename Fn, int... kP>
C10_HOST_DEVICE __forceinline__ void for_each_pass(Fn&& fn, std::integer_sequence<int, kP...>) {
  (fn(std::integral_constant<int, kP>{}), ...);
}
template <int kCount, typename Fn>
C10_HOST_DEVICE __forceinline__ void for_each_pass(Fn&& fn) {
  for_each_pass(fn, std::make_integer_sequence<int, kCount>{});
}

// The first value of a Sums: with kKeepTerm, what outputs() gets as in[0].
template <typename acc_t, typename Sums>
C10_HOST_DEVICE __forceinline__ acc_t first_value(const Sums& sums) {
  acc_t value;
  memcpy(&value, &sums, sizeof(acc_t));
  return value;
}

// Where the kernels keep the term outputs() needs again (kKeepTerm): in the first input's registers
// in float64 (its scalar_t is its acc_t, so nothing is rounded, and no registers are added), for
// 16-bit rows of up to 4 packs a thread in an array of its own (with twice float32's elements per
// byte, computing it again cost them more than the registers; at 8 packs the array would not fit),
// else computed again (float32: faster than holding it in the widest rows). The rule was measured
// with the starter's term, an exp.
enum class Keep { kAgain, kInFirstInput, kApart };

template <typename scalar_t, typename acc_t, int kPacksHeld>
constexpr Keep keep_term() {
  if (std::is_same_v<scalar_t, acc_t> && sizeof(acc_t) == 8) {
    return Keep::kInFirstInput;
  }
  if (sizeof(scalar_t) < sizeof(float) && kPacksHeld <= 4) {
    return Keep::kApart;
  }
  return Keep::kAgain;
}

// ---------------------------------------------------------------------------------------------
// How a kernel moves a row.

// Where the calling block stands in its row: block `rank` of the `ranks` blocks (a thread-block
// cluster) that share it. Kernels built with kSplit = false (every row in one block: the same code
// as if clusters did not exist), or for a GPU older than sm_90, have a block alone in its row.
struct RowSplit {
  int rank;
  int ranks;
};

template <bool kSplit>
__device__ __forceinline__ RowSplit row_split() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (kSplit) {
    const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    return {int(cluster.block_rank()), int(cluster.num_blocks())};
  }
#endif
  return {0, 1};
}

// kVec elements moved as one aligned 16-byte (or smaller) access; get(i) and set(i, value) take
// element i out and put it in. Elements narrower than 32 bits (float16/bfloat16) are held as
// 32-bit words, two to a register, and taken out where used: held as an array of elements, a
// pack is split into one register per element right after its load, which waits for the data
// before the thread's next load is issued.
template <typename scalar_t, int kVec>
struct alignas(sizeof(scalar_t) * kVec) Pack {
  static constexpr bool kWords =
      sizeof(scalar_t) < sizeof(std::uint32_t) && sizeof(scalar_t) * kVec % sizeof(std::uint32_t) == 0;
  using word_t = std::conditional_t<kWords, std::uint32_t, scalar_t>;
  word_t words[sizeof(scalar_t) * kVec / sizeof(word_t)];

  __device__ __forceinline__ scalar_t get(int i) const {
    scalar_t out;
    memcpy(&out, reinterpret_cast<const char*>(words) + i * sizeof(scalar_t), sizeof(scalar_t));
    return out;
  }
  __device__ __forceinline__ void set(int i, scalar_t value) {
    memcpy(reinterpret_cast<char*>(words) + i * sizeof(scalar_t), &value, sizeof(scalar_t));
  }
};

// A row as whole packs and edge elements: the elements before the row's first 16-byte boundary
// (head, fewer than kVec) and after its last (tail) are moved one by one, each by its own thread
// (the row's last thread takes edge element 0, the one before it element 1 ...; head + tail <
// 2 * kVec <= the 32 threads of the smallest block), and everything between in whole 16-byte
// packs: pack p holds elements head + p * kVec ... head + p * kVec + kVec - 1. So no pack is ever
// partial, and an odd width costs a thread one more element, not a row one more pack: a thread at
// the end, which holds a pack fewer when the packs do not divide evenly (the threads' longest path,
// which the whole block waits for at each reduction, stays the same).
// kWhole: the row is known to start on a 16-byte boundary and to end on one (whole packs only), so
// the kernel is built without the edge code.
template <typename scalar_t, int kVec, bool kWhole = false>
struct RowPacks {
  using pack_t = Pack<scalar_t, kVec>;
  int head;        // elements before the first pack
  int64_t packs;   // whole packs
  int tail;        // elements after the last pack
  RowSplit split;  // the row's blocks, which take its packs in turn, block by block

  __device__ RowPacks(const scalar_t* row, int64_t cols, RowSplit split = {0, 1}) {
    this->split = split;
    if constexpr (kWhole) {
      head = 0;
      packs = cols / kVec;
      tail = 0;
      return;
    }
    const int shift = int(reinterpret_cast<std::uintptr_t>(row) % sizeof(pack_t) / sizeof(scalar_t));
    head = int(std::min<int64_t>(cols, (kVec - shift) % kVec));
    packs = (cols - head) / kVec;
    tail = int(cols - head - packs * kVec);
  }

  __device__ int64_t count() const { return packs; }

  // The edge element of the calling thread (its index in the row), or -1 when it has none: only the
  // last block of a row has any.
  __device__ __forceinline__ int64_t edge() const {
    if constexpr (kWhole) {
      return -1;
    }
    const int j = (split.ranks - split.rank) * int(blockDim.x) - 1 - int(threadIdx.x);
    return j < head ? j : j < head + tail ? head + packs * kVec + (j - head) : -1;
  }

  // Calls fn(i) for each element i of a pack.
  template <typename Fn>
  __device__ __forceinline__ static void for_each(Fn fn) {
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      fn(i);
    }
  }

  // Pack p as an element of an array of packs that starts at the row's first boundary: written as
  // one address, row + head + p * kVec, nvcc splits the store into four 32-bit stores.
  __device__ __forceinline__ pack_t load(const scalar_t* row, int64_t p) const {
    return reinterpret_cast<const pack_t*>(row + head)[p];
  }

  // The same load marked evict_last for L2 (sm_80 and newer; plain elsewhere), as torch.compile's
  // Triton kernels mark the loads of a row they reduce: see rows_kernel.
  __device__ __forceinline__ pack_t load_evict_last(const scalar_t* row, int64_t p) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    static_assert(sizeof(pack_t) == sizeof(uint4));
    std::uint64_t policy;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    uint4 words;
    asm("ld.global.L2::cache_hint.v4.u32 { %0, %1, %2, %3 }, [%4], %5;"
        : "=r"(words.x), "=r"(words.y), "=r"(words.z), "=r"(words.w)
        : "l"(reinterpret_cast<const pack_t*>(row + head) + p), "l"(policy));
    pack_t out;
    memcpy(&out, &words, sizeof(out));
    return out;
#else
    return load(row, p);
#endif
  }

  __device__ __forceinline__ void store(scalar_t* row, int64_t p, const pack_t& in) const {
    reinterpret_cast<pack_t*>(row + head)[p] = in;
  }

  // Pack k of the calling thread: the row's threads take its packs in turn.
  __device__ __forceinline__ int64_t mine(int k) const {
    return threadIdx.x + int64_t(split.rank + k * split.ranks) * blockDim.x;
  }

  // The packs mine(k) (k < kPacks) of the row: every load issued before any is used; kEvictLast:
  // by load_evict_last.
  template <bool kEvictLast, int kPacks>
  __device__ __forceinline__ void issue_loads(const scalar_t* row, pack_t (&out)[kPacks]) const {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      if (mine(k) < count()) {
        if constexpr (kEvictLast) {
          out[k] = load_evict_last(row, mine(k));
        } else {
          out[k] = load(row, mine(k));
        }
      }
    }
  }

  // The packs mine(kFirst + j) (j < kCount) of the row copied into shared memory, to staged[j *
  // blockDim.x + threadIdx.x], by cp.async: straight from L2, without a register on the way, so they
  // cost the thread none. __pipeline_wait_prior(0) waits for them.
  template <int kFirst, int kCount>
  __device__ __forceinline__ void issue_staged_loads(const scalar_t* row, pack_t* staged) const {
#pragma unroll
    for (int j = 0; j < kCount; ++j) {
      if (mine(kFirst + j) < count()) {
        __pipeline_memcpy_async(&staged[j * blockDim.x + threadIdx.x],
                                reinterpret_cast<const pack_t*>(row + head) + mine(kFirst + j), sizeof(pack_t));
      }
    }
    __pipeline_commit();
  }
};

// Packs a thread of the wide kernels loads at once, of each input, all in flight before the first
// is used: 2 (4 spill under the 64 registers of a 1024-thread block). Their loops over batches are
// kept rolled (#pragma unroll 1): unrolled, the element-by-element instantiations spill.
constexpr int kWideBatch = 2;

// The packs first, first + blockDim.x, ... (kWideBatch of them) of a row, taken together by the
// wide kernels' loops: every load issued before any is used.
template <typename scalar_t, int kVec>
struct WideBatch {
  int64_t first;

  __device__ explicit WideBatch(int64_t first) : first(first) {}

  __device__ __forceinline__ int64_t pack(int b) const { return first + int64_t(b) * blockDim.x; }

  // Calls fn(b) for each pack b of the batch that lies in the row.
  template <typename Fn>
  __device__ __forceinline__ void for_each(const RowPacks<scalar_t, kVec>& packs, Fn fn) const {
#pragma unroll
    for (int b = 0; b < kWideBatch; ++b) {
      if (pack(b) < packs.count()) {
        fn(b);
      }
    }
  }

  __device__ __forceinline__ void load(const RowPacks<scalar_t, kVec>& packs, const scalar_t* row,
                                       Pack<scalar_t, kVec> (&out)[kWideBatch]) const {
    for_each(packs, [&](int b) { out[b] = packs.load(row, pack(b)); });
  }
};

// ---------------------------------------------------------------------------------------------
// Reductions of a Sums (K acc_t values) by the op's combine: warp shuffles, then one Sums per warp
// through shared memory, then (a row split over a cluster) one per block through each other's
// shared memory.

// A Sums as its K acc_t values, to move through shuffles and shared-memory stores one by one.
template <typename acc_t, typename Sums>
struct SumsValues {
  static constexpr int kCount = int(sizeof(Sums) / sizeof(acc_t));
  acc_t v[kCount > 0 ? kCount : 1];  // an op of no pass has an empty Sums
};

template <typename acc_t, typename Sums>
__device__ __forceinline__ SumsValues<acc_t, Sums> values_of(const Sums& sums) {
  SumsValues<acc_t, Sums> out;
  memcpy(&out, &sums, sizeof(Sums));
  return out;
}

template <typename acc_t, typename Sums>
__device__ __forceinline__ Sums sums_of(const SumsValues<acc_t, Sums>& values) {
  Sums out;
  memcpy(&out, &values, sizeof(Sums));
  return out;
}

// Every thread of the warp gets the warp's combined Sums.
template <typename acc_t, typename Op, typename Sums>
__device__ __forceinline__ Sums warp_all_reduce(const Op& op, int pass, Sums sums) {
  for (int mask = kWarpSize / 2; mask > 0; mask /= 2) {
    SumsValues<acc_t, Sums> other = values_of<acc_t>(sums);
#pragma unroll
    for (int k = 0; k < SumsValues<acc_t, Sums>::kCount; ++k) {
      other.v[k] = __shfl_xor_sync(0xffffffffu, other.v[k], mask);
    }
    sums = op.combine(pass, sums, sums_of<acc_t, Sums>(other));
  }
  return sums;
}

// Combines one Sums per thread, each warp's by shuffles and then the warps' results the same way;
// every thread of the block gets the result. blockDim.x is a multiple of the warp size; smem holds
// one Sums per warp and is free again on return. A block of one warp (the shortest rows) has its
// result after the shuffles: no barrier.
template <typename acc_t, typename Op, typename Sums>
__device__ Sums block_all_reduce(const Op& op, int pass, Sums sums, Sums* smem) {
  sums = warp_all_reduce<acc_t>(op, pass, sums);
  if (blockDim.x == kWarpSize) {
    return sums;
  }
  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (lane == 0) {
    smem[warp] = sums;
  }
  __syncthreads();
  sums = warp_all_reduce<acc_t>(op, pass, lane < int(blockDim.x / kWarpSize) ? smem[lane] : op.identity(pass));
  __syncthreads();  // smem may be reused by the next pass or row
  return sums;
}

// The combined Sums of the parts of a row that the blocks of its cluster hold, exchanged through
// each other's shared memory: each block sends its part (K values) into slot `rank` of every block
// by st.async, which counts the bytes it delivers on the receiving block's mbarrier, and each block
// waits on its own mbarrier until all parts' bytes have landed, then combines them in rank order,
// so all get the same result. No cluster-wide barrier per exchange: one (cluster.sync) orders each
// block's memory accesses before it (release), and the blocks stalled there at its memory fence; a
// wait on the mbarrier does not.
// Two sets of slots and mbarriers take turns, exchange by exchange (a row takes one exchange per
// pass): a block sends its part of the exchange after next into a set only once it has every part
// of its next exchange, which no block sends before it has read that set (its reads come before
// the block reduction of its next exchange, whose barrier or shuffles its sending threads wait
// at). A block's first send waits for all blocks of the cluster to have set up their mbarriers
// (start: a barrier arrival there, its wait before the send). A block returns only after the last
// exchange of its last row has landed in full, so no block writes into one that has exited.
template <typename acc_t, typename Sums>
struct ClusterExchange {
  static constexpr int kValues = SumsValues<acc_t, Sums>::kCount;
  static_assert(sizeof(acc_t) == 4 || sizeof(acc_t) == 8);
  Sums slots[2][kMaxRanks];
  std::uint64_t landed[2];  // mbarriers: set b's parts have landed

  static __device__ __forceinline__ std::uint32_t address(const void* ptr) {
    return static_cast<std::uint32_t>(__cvta_generic_to_shared(ptr));
  }

  __device__ __forceinline__ void start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (threadIdx.x == 0) {
      for (std::uint64_t& barrier : landed) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(address(&barrier)) : "memory");
      }
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#endif
  }

  // The cluster's combined Sums of part, for the block's exchange number `exchange` (0, 1, 2 ...).
  template <typename Op>
  __device__ __forceinline__ Sums all_reduce(const Op& op, int pass, Sums part, RowSplit split, int64_t exchange) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const int set = int(exchange % 2);
    const std::uint32_t phase = std::uint32_t(exchange / 2 % 2);  // each exchange of a set completes a phase
    const std::uint32_t barrier = address(&landed[set]);
    if (threadIdx.x == 0) {
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(barrier),
                   "r"(std::uint32_t(split.ranks * sizeof(Sums)))
                   : "memory");
    }
    if (exchange == 0) {
      asm volatile("barrier.cluster.wait.aligned;" ::: "memory");  // every block has set up its mbarriers
    }
    if (int(threadIdx.x) < split.ranks) {  // thread r sends to block r
      std::uint32_t slot, their_barrier;
      asm("mapa.shared::cluster.u32 %0, %1, %2;"
          : "=r"(slot)
          : "r"(address(&slots[set][split.rank])), "r"(threadIdx.x));
      asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(their_barrier) : "r"(barrier), "r"(threadIdx.x));
      const SumsValues<acc_t, Sums> values = values_of<acc_t>(part);
#pragma unroll
      for (int k = 0; k < kValues; ++k) {
        const std::uint32_t at = slot + std::uint32_t(k * sizeof(acc_t));
        if constexpr (sizeof(acc_t) == 8) {
          asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];" ::"r"(at),
                       "l"(__double_as_longlong(values.v[k])), "r"(their_barrier)
                       : "memory");
        } else {
          asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(at),
                       "r"(__float_as_uint(values.v[k])), "r"(their_barrier)
                       : "memory");
        }
      }
    }
    std::uint32_t done = 0;
    while (!done) {
      asm volatile(
          "{\n .reg .pred landed;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 landed, [%1], %2;\n"
          " selp.u32 %0, 1, 0, landed;\n}"
          : "=r"(done)
          : "r"(barrier), "r"(phase)
          : "memory");
    }
    part = slots[set][0];
    for (int r = 1; r < split.ranks; ++r) {
      part = op.combine(pass, part, slots[set][r]);
    }
#endif
    return part;
  }
};

// ---------------------------------------------------------------------------------------------
// Kernels. Each takes the op, its tensors (the first three inputs, two outputs and two row outputs;
// the ones the op does not have are null), the row count and width, and the row order. The tensors
// are kernel parameters of their own, marked __restrict__, so that the compiler may read the inputs
// through the read-only path.

template <typename scalar_t>
struct Tensors {
  const scalar_t* in[kMaxInputs] = {};
  const scalar_t* row_in[kMaxRowInputs] = {};
  scalar_t* out[kMaxOutputs] = {};
  scalar_t* row_out[kMaxOutputs] = {};
};

// The row's per-row inputs handed to the op (start), before its first pass.
template <typename Op, typename scalar_t, typename Row>
__device__ __forceinline__ void start_row(const Op& op, const scalar_t* const* row_in, int64_t row, Row& state) {
  using acc_t = opmath_t<scalar_t>;
  if constexpr (kRowInputsOf<Op> > 0) {
    acc_t values[kRowInputsOf<Op>];
#pragma unroll
    for (int m = 0; m < kRowInputsOf<Op>; ++m) {
      values[m] = acc_t(row_in[m][row]);
    }
    op.start(values, state);
  }
}

// Loads of the 16-bit and float32 rows the register kernels hold are marked evict_last for L2, as
// Triton's kernels mark a tensor read again: that made those rows faster (forward and backward, in
// the training step the generated benchmark times), where an L1 hint alone or the same loads
// unmarked changed nothing. Float64 rows, marked the same way, were slower (split over a cluster or
// with edge elements): they keep plain loads.
template <typename scalar_t>
constexpr bool kEvictLast = sizeof(scalar_t) <= sizeof(float);

// The row in registers: kPacks packs of each input per thread (kWhole: rows of whole packs only),
// kStaged more in shared memory (dynamic, kInputs * kStaged * blockDim.x packs), over one block or
// the blocks of a cluster (kSplit). Each input byte is read from memory once and each output byte
// written once, whatever the passes: the fewest bytes the op can move, which bounds its speed.
template <typename scalar_t, typename Op, int kVec, int kPacks, int kStaged, bool kSplit, bool kWhole>
__global__ void __launch_bounds__(kMaxThreads)
    rows_kernel(const Op op, const scalar_t* __restrict__ in0, const scalar_t* __restrict__ in1,
                const scalar_t* __restrict__ in2, scalar_t* __restrict__ out0, scalar_t* __restrict__ out1,
                const scalar_t* __restrict__ row_in0, const scalar_t* __restrict__ row_in1,
                scalar_t* __restrict__ row_out0, scalar_t* __restrict__ row_out1, int64_t rows, int64_t cols) {
  using acc_t = opmath_t<scalar_t>;
  using Sums = typename Op::Sums;
  using Row = typename Op::Row;
  using pack_t = Pack<scalar_t, kVec>;
  constexpr int kIn = Op::kInputs;
  using packs_t = pack_t[kIn];  // a pack of each input
  using values_t = acc_t[kIn];  // an element of each input
  constexpr int kLast = Op::kPasses - 1;
  constexpr Keep kKeep = kKeepTermOf<Op> ? keep_term<scalar_t, acc_t, kPacks + kStaged>() : Keep::kAgain;
  const scalar_t* const in[kMaxInputs] = {in0, in1, in2};
  scalar_t* const out[2] = {out0, out1};
  const scalar_t* const row_in[kMaxRowInputs] = {row_in0, row_in1};
  scalar_t* const row_out[2] = {row_out0, row_out1};
  __shared__ Sums smem[kMaxWarps];
  __shared__ ClusterExchange<acc_t, Sums> exchange;  // the parts of a row's sums, of its blocks (kSplit)
  extern __shared__ __align__(kVecBytes) unsigned char staged_smem[];
  pack_t* staged = reinterpret_cast<pack_t*>(staged_smem);
  const RowSplit split = row_split<kSplit>();
  if constexpr (kSplit) {
    exchange.start();
  }
  const int64_t row_step = gridDim.x / split.ranks;
  for (int64_t r = blockIdx.x / split.ranks, iteration = 0; r < rows; r += row_step, ++iteration) {
    const int64_t row = rows_last_to_first(Op::kPasses) ? rows - 1 - r : r;
    const int64_t offset = row * cols;
    // Every tensor's rows start at the same offset within a pack (the planner checks).
    const RowPacks<scalar_t, kVec, kWhole> packs(in0 + offset, cols, split);

    pack_t held[kIn][kPacks];
#pragma unroll
    for (int i = 0; i < kIn; ++i) {
      packs.template issue_loads<kEvictLast<scalar_t>>(in[i] + offset, held[i]);
    }
    if constexpr (kStaged > 0) {
#pragma unroll
      for (int i = 0; i < kIn; ++i) {
        packs.template issue_staged_loads<kPacks, kStaged>(in[i] + offset, staged + i * kStaged * blockDim.x);
      }
    }
    // Calls fn(p, k, index) for each pack the thread holds, p[i] the pack of input i: held[i][k]
    // (k < kPacks) and then its staged ones (k = kPacks + j); index is the pack's place in the row.
    // fn gets the packs as copies in registers (a staged one in one 16-byte access), which are
    // written back where write is std::true_type.
    const auto each_pack = [&](auto fn, auto write) {
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        if (packs.mine(k) < packs.count()) {
          pack_t p[kIn];
#pragma unroll
          for (int i = 0; i < kIn; ++i) {
            p[i] = held[i][k];
          }
          fn(p, k, packs.mine(k));
          if constexpr (decltype(write)::value) {
#pragma unroll
            for (int i = 0; i < kIn; ++i) {
              held[i][k] = p[i];
            }
          }
        }
      }
      if constexpr (kStaged > 0) {
        __pipeline_wait_prior(0);  // the staged copies have landed
      }
#pragma unroll
      for (int k = kPacks; k < kPacks + kStaged; ++k) {
        if (packs.mine(k) < packs.count()) {
          pack_t p[kIn];
#pragma unroll
          for (int i = 0; i < kIn; ++i) {
            p[i] = staged[(i * kStaged + k - kPacks) * blockDim.x + threadIdx.x];
          }
          fn(p, k, packs.mine(k));
          if constexpr (decltype(write)::value) {
#pragma unroll
            for (int i = 0; i < kIn; ++i) {
              staged[(i * kStaged + k - kPacks) * blockDim.x + threadIdx.x] = p[i];
            }
          }
        }
      }
    };
    const auto element = [](const packs_t& p, int j, values_t& vals) {
#pragma unroll
      for (int i = 0; i < kIn; ++i) {
        vals[i] = acc_t(p[i].get(j));
      }
    };
    const int64_t e = packs.edge();
    acc_t edge[kIn];
#pragma unroll
    for (int i = 0; i < kIn; ++i) {
      edge[i] = e >= 0 ? acc_t(in[i][offset + e]) : acc_t(0);
    }

    Row row_state{};
    start_row(op, row_in, row, row_state);
    acc_t kept[kKeep == Keep::kApart ? kPacks : 1][kVec];  // the terms outputs() needs (Keep::kApart)
    // An op of no pass has no pass members (identity, term, combine, finish) to build.
    if constexpr (Op::kPasses > 0) {
      for_each_pass<Op::kPasses>([&](auto pass) {
        constexpr int kPass = decltype(pass)::value;
        constexpr bool kKeepHere = kPass == kLast && kKeepTermOf<Op>;
        constexpr bool kWriteBack = kKeepHere && kKeep == Keep::kInFirstInput;  // the terms go into held packs
        Sums sums = op.identity(kPass);
        each_pack(
            [&](packs_t& p, int k, int64_t) {
              packs.for_each([&](int j) {
                acc_t vals[kIn];
                element(p, j, vals);
                const Sums term = op.term(kPass, vals, row_state);
                sums = op.combine(kPass, sums, term);
                if constexpr (kWriteBack) {
                  p[0].set(j, static_cast<scalar_t>(first_value<acc_t>(term)));
                } else if constexpr (kKeepHere && kKeep == Keep::kApart) {
                  kept[k][j] = first_value<acc_t>(term);
                }
              });
            },
            std::bool_constant<kWriteBack>{});
        // The thread's edge element joins its part after its packs, and in the first pass by a select
        // (its term of the zeros in edge dropped where it has none), not a branch: so the edge load is
        // issued with the packs' and nothing waits for it before every pack load is in flight. Later
        // passes, after the loads have landed, take a branch, so that a costly term is computed only by
        // the threads that have an edge element.
        if constexpr (kPass == 0) {
          const Sums term = op.term(kPass, edge, row_state);
          sums = e >= 0 ? op.combine(kPass, sums, term) : sums;
          if constexpr (kKeepHere) {
            edge[0] = first_value<acc_t>(term);
          }
        } else if (e >= 0) {
          const Sums term = op.term(kPass, edge, row_state);
          sums = op.combine(kPass, sums, term);
          if constexpr (kKeepHere) {
            edge[0] = first_value<acc_t>(term);
          }
        }
        sums = block_all_reduce<acc_t>(op, kPass, sums, smem);
        if constexpr (kSplit) {
          sums = exchange.all_reduce(op, kPass, sums, split, iteration * Op::kPasses + kPass);
        }
        op.finish(kPass, sums, cols, row_state);
      });
    }

    if constexpr (Op::kRowOutputs > 0) {
      if (split.rank == 0 && threadIdx.x == 0) {
        acc_t values[Op::kRowOutputs];
        op.row_outputs(row_state, values);
#pragma unroll
        for (int m = 0; m < Op::kRowOutputs; ++m) {
          row_out[m][row] = static_cast<scalar_t>(values[m]);
        }
      }
    }
    if constexpr (Op::kOutputs > 0) {
      each_pack(
          [&](packs_t& p, int k, int64_t index) {
            pack_t result[Op::kOutputs];
            packs.for_each([&](int j) {
              acc_t vals[kIn];
              element(p, j, vals);  // Keep::kInFirstInput: vals[0] is the term already
              if constexpr (kKeep == Keep::kApart) {
                vals[0] = kept[k][j];
              } else if constexpr (kKeepTermOf<Op> && kKeep == Keep::kAgain) {
                vals[0] = first_value<acc_t>(op.term(kLast, vals, row_state));
              }
              acc_t values[Op::kOutputs];
              op.outputs(vals, row_state, values);
#pragma unroll
              for (int m = 0; m < Op::kOutputs; ++m) {
                result[m].set(j, static_cast<scalar_t>(values[m]));
              }
            });
#pragma unroll
            for (int m = 0; m < Op::kOutputs; ++m) {
              packs.store(out[m] + offset, index, result[m]);
            }
          },
          std::false_type{});
      if (e >= 0) {
        acc_t values[Op::kOutputs];
        op.outputs(edge, row_state, values);  // kKeepTerm: edge[0] is the term
#pragma unroll
        for (int m = 0; m < Op::kOutputs; ++m) {
          out[m][offset + e] = static_cast<scalar_t>(values[m]);
        }
      }
    }
  }
}

// Rows too wide for registers: each pass reads the row again (an op of kOnline: once for both),
// kWideBatch packs of each input a thread at a time, and so do the outputs (mostly from L2, where
// the row's earlier reads left it).
template <typename scalar_t, typename Op, int kVec>
__global__ void __launch_bounds__(kMaxThreads)
    rows_wide_kernel(const Op op, const scalar_t* __restrict__ in0, const scalar_t* __restrict__ in1,
                     const scalar_t* __restrict__ in2, scalar_t* __restrict__ out0, scalar_t* __restrict__ out1,
                     const scalar_t* __restrict__ row_in0, const scalar_t* __restrict__ row_in1,
                     scalar_t* __restrict__ row_out0, scalar_t* __restrict__ row_out1, int64_t rows, int64_t cols) {
  using acc_t = opmath_t<scalar_t>;
  using Sums = typename Op::Sums;
  using Row = typename Op::Row;
  using pack_t = Pack<scalar_t, kVec>;
  constexpr int kIn = Op::kInputs;
  using packs_t = pack_t[kIn];
  using values_t = acc_t[kIn];
  constexpr int kLast = Op::kPasses - 1;
  const scalar_t* const in[kMaxInputs] = {in0, in1, in2};
  scalar_t* const out[2] = {out0, out1};
  const scalar_t* const row_in[kMaxRowInputs] = {row_in0, row_in1};
  scalar_t* const row_out[2] = {row_out0, row_out1};
  __shared__ Sums smem[kMaxWarps];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t row = rows_last_to_first(Op::kPasses) ? rows - 1 - r : r;
    const int64_t offset = row * cols;
    const RowPacks<scalar_t, kVec> packs(in0 + offset, cols);
    // Calls batch_fn(each) for each batch of packs the thread takes, all its loads issued first;
    // each(fn) calls fn(p, index) for each pack of the batch, p[i] the pack of input i.
    const auto each_batch = [&](auto batch_fn) {
#pragma unroll 1
      for (int64_t first = threadIdx.x; first < packs.count(); first += kWideBatch * blockDim.x) {
        const WideBatch<scalar_t, kVec> batch(first);
        pack_t loaded[kIn][kWideBatch];
#pragma unroll
        for (int i = 0; i < kIn; ++i) {
          batch.load(packs, in[i] + offset, loaded[i]);
        }
        batch_fn([&](auto fn) {
          batch.for_each(packs, [&](int b) {
            pack_t p[kIn];
#pragma unroll
            for (int i = 0; i < kIn; ++i) {
              p[i] = loaded[i][b];
            }
            fn(p, batch.pack(b));
          });
        });
      }
    };
    // Calls fn(p, index) for each pack of the row the thread takes.
    const auto each_pack = [&](auto fn) { each_batch([&](auto each) { each(fn); }); };
    const auto element = [](const packs_t& p, int j, values_t& vals) {
#pragma unroll
      for (int i = 0; i < kIn; ++i) {
        vals[i] = acc_t(p[i].get(j));
      }
    };
    const int64_t e = packs.edge();
    acc_t edge[kIn];
#pragma unroll
    for (int i = 0; i < kIn; ++i) {
      edge[i] = e >= 0 ? acc_t(in[i][offset + e]) : acc_t(0);
    }

    Row row_state{};
    start_row(op, row_in, row, row_state);
    if constexpr (kOnlineOf<Op>) {
      // Both passes in one read of the row, as a running maximum with a rescaled sum: each batch
      // of packs adds its pass-0 terms, the thread's pass-1 sums are brought to the row it now
      // finds (rescale), and the batch adds its pass-1 terms under that row. The block's pass-0
      // result rescales each thread's pass-1 sums once more before they are combined.
      Sums first = op.identity(0);
      Sums second = op.identity(1);
      Row seen = row_state;  // the row as the thread's part finds it so far: at first, as pass 0 of nothing
      op.finish(0, first, cols, seen);
      const auto advance = [&](const Sums& next_first) {
        Row next = row_state;
        op.finish(0, next_first, cols, next);
        second = op.rescale(seen, next, second);
        first = next_first;
        seen = next;
      };
      if (e >= 0) {
        advance(op.combine(0, first, op.term(0, edge, seen)));
        second = op.combine(1, second, op.term(1, edge, seen));
      }
      each_batch([&](auto each) {
        Sums next = first;
        each([&](const packs_t& p, int64_t) {
          packs.for_each([&](int j) {
            acc_t vals[kIn];
            element(p, j, vals);
            next = op.combine(0, next, op.term(0, vals, seen));
          });
        });
        advance(next);
        each([&](const packs_t& p, int64_t) {
          packs.for_each([&](int j) {
            acc_t vals[kIn];
            element(p, j, vals);
            second = op.combine(1, second, op.term(1, vals, seen));
          });
        });
      });
      op.finish(0, block_all_reduce<acc_t>(op, 0, first, smem), cols, row_state);
      second = op.rescale(seen, row_state, second);
      op.finish(1, block_all_reduce<acc_t>(op, 1, second, smem), cols, row_state);
      if constexpr (kKeepTermOf<Op>) {
        if (e >= 0) {
          edge[0] = first_value<acc_t>(op.term(kLast, edge, row_state));
        }
      }
    } else {
      // An op of no pass has no pass members (identity, term, combine, finish) to build.
      if constexpr (Op::kPasses > 0) {
        for_each_pass<Op::kPasses>([&](auto pass) {
          constexpr int kPass = decltype(pass)::value;
          Sums sums = op.identity(kPass);
          if (e >= 0) {
            const Sums term = op.term(kPass, edge, row_state);
            sums = op.combine(kPass, sums, term);
            if constexpr (kPass == kLast && kKeepTermOf<Op>) {
              edge[0] = first_value<acc_t>(term);
            }
          }
          each_pack([&](const packs_t& p, int64_t) {
            packs.for_each([&](int j) {
              acc_t vals[kIn];
              element(p, j, vals);
              sums = op.combine(kPass, sums, op.term(kPass, vals, row_state));
            });
          });
          sums = block_all_reduce<acc_t>(op, kPass, sums, smem);
          op.finish(kPass, sums, cols, row_state);
        });
      }
    }

    if constexpr (Op::kRowOutputs > 0) {
      if (threadIdx.x == 0) {
        acc_t values[Op::kRowOutputs];
        op.row_outputs(row_state, values);
#pragma unroll
        for (int m = 0; m < Op::kRowOutputs; ++m) {
          row_out[m][row] = static_cast<scalar_t>(values[m]);
        }
      }
    }
    if constexpr (Op::kOutputs > 0) {
      each_pack([&](const packs_t& p, int64_t index) {
        pack_t result[Op::kOutputs];
        packs.for_each([&](int j) {
          acc_t vals[kIn];
          element(p, j, vals);
          if constexpr (kKeepTermOf<Op>) {
            vals[0] = first_value<acc_t>(op.term(kLast, vals, row_state));
          }
          acc_t values[Op::kOutputs];
          op.outputs(vals, row_state, values);
#pragma unroll
          for (int m = 0; m < Op::kOutputs; ++m) {
            result[m].set(j, static_cast<scalar_t>(values[m]));
          }
        });
#pragma unroll
        for (int m = 0; m < Op::kOutputs; ++m) {
          packs.store(out[m] + offset, index, result[m]);
        }
      });
      if (e >= 0) {
        acc_t values[Op::kOutputs];
        op.outputs(edge, row_state, values);  // kKeepTerm: edge[0] is the term
#pragma unroll
        for (int m = 0; m < Op::kOutputs; ++m) {
          out[m][offset + e] = static_cast<scalar_t>(values[m]);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Launch: the GPU's facts, the plan, the planned kernel.

// What the launch code reads of a GPU, from the CUDA runtime (which both ABIs reach alike; torch's
// cached device properties are ATen's), asked once per device.
struct DeviceFacts {
  int major = 0;       // compute capability
  int sms = 0;         // multiprocessors
  int smem_optin = 0;  // the most shared memory a block may opt into, in bytes
};

inline int current_device() {
  int device = 0;
  OP_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

inline const DeviceFacts& device_facts(int device) {
  static std::once_flag asked[kMaxGpus];
  static DeviceFacts facts[kMaxGpus];
  std::call_once(asked[device], [device] {
    DeviceFacts& f = facts[device];
    OP_CUDA_CHECK(cudaDeviceGetAttribute(&f.major, cudaDevAttrComputeCapabilityMajor, device));
    OP_CUDA_CHECK(cudaDeviceGetAttribute(&f.sms, cudaDevAttrMultiProcessorCount, device));
    OP_CUDA_CHECK(cudaDeviceGetAttribute(&f.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  });
  return facts[device];
}

// Blocks of kKernel that fit on one SM at once, at `threads` per block and `ranks` blocks per row:
// the occupancy calculator's answer, remembered per device, block size and cluster size (stored
// plus one: 0 is not asked yet), so a launch costs no extra calls. Clusters need an sm_90 GPU and
// kernel code compiled for it (not code compiled for an older GPU, which has none of the cluster
// exchange): where either is missing, 0. kSmemPerThread: the kernel's dynamic shared memory, in
// bytes per thread of its block (kernels above 48 KB a block are allowed it here, on the first
// question for a device).
template <auto kKernel, int kSmemPerThread = 0>
int resident_blocks(int threads, int ranks) {
  static std::atomic<int> known[kMaxGpus][kMaxWarps + 1][kMaxRanks + 1];
  const int device = current_device();
  std::atomic<int>& blocks = known[device][threads / kWarpSize][ranks];
  if (blocks.load(std::memory_order_relaxed) == 0) {
    int answer = 0;
    if (kSmemPerThread > 0) {
      OP_CUDA_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         std::min<int>(kSmemPerThread * kMaxThreads, device_facts(device).smem_optin)));
    }
    if (ranks == 1) {
      OP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&answer, kKernel, threads, kSmemPerThread * threads));
    } else {
      cudaFuncAttributes code{};
      OP_CUDA_CHECK(cudaFuncGetAttributes(&code, kKernel));
      if (code.ptxVersion >= 90 && code.binaryVersion >= 90) {
        cudaLaunchAttribute cluster{};
        cluster.id = cudaLaunchAttributeClusterDimension;
        cluster.val.clusterDim = {unsigned(ranks), 1, 1};
        cudaLaunchConfig_t config{};
        config.gridDim = dim3(ranks);
        config.blockDim = dim3(threads);
        config.attrs = &cluster;
        config.numAttrs = 1;
        int clusters = 0;
        OP_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kKernel, &config));
        answer = clusters * ranks / device_facts(device).sms;
      }
    }
    blocks.store(answer + 1, std::memory_order_relaxed);
  }
  return blocks.load(std::memory_order_relaxed) - 1;
}

// The current GPU's facts for the planner. Clusters: an sm_90 GPU (whether the build has cluster
// code for it is the kernel's question, in resident_blocks).
inline Gpu gpu_facts() {
  const DeviceFacts& gpu = device_facts(current_device());
  return Gpu{fast_memory_per_sm(), gpu.major >= 9, int64_t(gpu.smem_optin)};
}

// Launches kernel as `plan` says: a cluster of plan.ranks blocks per row when that is more than one.
template <typename scalar_t, typename Op, typename... Params>
void launch(void (*kernel)(Params...), const Plan& plan, const Op& op, const Tensors<scalar_t>& t, int64_t rows,
            int64_t cols) {
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim = {unsigned(plan.ranks), 1, 1};
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(plan.blocks));
  config.blockDim = dim3(unsigned(plan.threads));
  config.stream = current_stream();
  config.dynamicSmemBytes = plan.smem;
  config.attrs = &cluster;
  config.numAttrs = plan.ranks > 1 ? 1 : 0;
  OP_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, op, t.in[0], t.in[1], t.in[2], t.out[0], t.out[1], t.row_in[0],
                                   t.row_in[1], t.row_out[0], t.row_out[1], rows, cols));
}

// Calls fn(std::integral_constant<int, packs>) for packs = 1, 2, 4 ... up to kPacks: one kernel
// instantiation per power of two.
template <int kPacks, typename Fn>
void with_packs(int packs, Fn fn) {
  if constexpr (kPacks > 1) {
    if (packs < kPacks) {
      return with_packs<kPacks / 2>(packs, fn);
    }
  }
  fn(std::integral_constant<int, kPacks>{});
}

// Where a pointer stands within a 16-byte pack.
inline int offset_in_pack(const void* ptr) { return int(reinterpret_cast<std::uintptr_t>(ptr) % kVecBytes); }

// What the planner knows of Op on scalar_t rows.
template <typename scalar_t, typename Op>
constexpr OpFacts kOpFacts{Op::kInputs, Op::kPasses, int(sizeof(scalar_t))};

// Runs op over the call's rows on the current CUDA stream: contiguous tensors of one dtype, on the
// current device; out as outputs() made them.
template <typename scalar_t, typename Op>
void run_rows(const Op& op, const Call& call, const std::vector<Tensor>& out) {
  using acc_t = opmath_t<scalar_t>;
  check_row_op<Op, acc_t>();
  const Layout<Op> layout = layout_of<Op>(call);
  const int64_t rows = layout.rows;
  const int64_t cols = layout.cols;
  if (rows == 0 || (cols == 0 && Op::kRowOutputs == 0)) {
    return;
  }
  constexpr int kVec = kVecBytes / sizeof(scalar_t);
  constexpr int kMostPacks = max_packs(Op::kInputs);
  constexpr int kStagedRegisterPacks = staged_register_packs(Op::kInputs);
  constexpr int kStagedSmemPacks = staged_smem_packs(Op::kInputs);
  constexpr int kStagedSmemPerThread = Op::kInputs * kStagedSmemPacks * kVecBytes;

  Tensors<scalar_t> tensors;
  for (int i = 0; i < Op::kInputs; ++i) {
    tensors.in[i] = call.tensors[layout.index[i]].template const_data_ptr<scalar_t>();
  }
  for (int m = 0; m < kRowInputsOf<Op>; ++m) {
    tensors.row_in[m] = call.tensors[layout.index[Op::kInputs + m]].template const_data_ptr<scalar_t>();
  }
  for (int m = 0; m < Op::kOutputs; ++m) {
    tensors.out[m] = out[m].mutable_data_ptr<scalar_t>();
  }
  for (int m = 0; m < Op::kRowOutputs; ++m) {
    tensors.row_out[m] = out[Op::kOutputs + m].template mutable_data_ptr<scalar_t>();
  }
  // The per-row tensors move one value at a time: their offsets do not matter.
  Rows problem{rows, cols, true, offset_in_pack(tensors.in[0])};
  for (int i = 0; i < Op::kInputs; ++i) {
    problem.same_offset = problem.same_offset && offset_in_pack(tensors.in[i]) == problem.first_offset;
  }
  for (int m = 0; m < Op::kOutputs; ++m) {
    problem.same_offset = problem.same_offset && offset_in_pack(tensors.out[m]) == problem.first_offset;
  }

  const auto resident = [](Variant variant, int packs, int threads, int ranks) {
    int blocks = 0;
    if (variant == Variant::kCluster) {
      if constexpr (built(Variant::kCluster, kOpFacts<scalar_t, Op>, kMostPacks)) {
        blocks = resident_blocks<rows_kernel<scalar_t, Op, kVec, kMostPacks, 0, true, false>>(threads, ranks);
      }
    } else if (variant == Variant::kStaged) {
      if constexpr (built(Variant::kStaged, kOpFacts<scalar_t, Op>, kStagedRegisterPacks)) {
        blocks = resident_blocks<rows_kernel<scalar_t, Op, kVec, kStagedRegisterPacks, kStagedSmemPacks, false, false>,
                                 kStagedSmemPerThread>(threads, 1);
      }
    } else {
      with_packs<kMostPacks>(packs, [&](auto p) {
        blocks = resident_blocks<rows_kernel<scalar_t, Op, kVec, decltype(p)::value, 0, false, false>>(threads, 1);
      });
    }
    return blocks;
  };
  const Plan plan = plan_rows(problem, kOpFacts<scalar_t, Op>, gpu_facts(), resident);

  switch (plan.variant) {
    case Variant::kWideElements:
      return launch(rows_wide_kernel<scalar_t, Op, 1>, plan, op, tensors, rows, cols);
    case Variant::kWide:
      return launch(rows_wide_kernel<scalar_t, Op, kVec>, plan, op, tensors, rows, cols);
    case Variant::kStaged:
      if constexpr (built(Variant::kStaged, kOpFacts<scalar_t, Op>, kStagedRegisterPacks)) {
        return launch(rows_kernel<scalar_t, Op, kVec, kStagedRegisterPacks, kStagedSmemPacks, false, false>, plan, op,
                      tensors, rows, cols);
      }
      break;
    case Variant::kCluster:
      if constexpr (built(Variant::kCluster, kOpFacts<scalar_t, Op>, kMostPacks)) {
        return launch(rows_kernel<scalar_t, Op, kVec, kMostPacks, 0, true, false>, plan, op, tensors, rows, cols);
      }
      break;
    case Variant::kRegistersWhole:
      if constexpr (built(Variant::kRegistersWhole, kOpFacts<scalar_t, Op>, 1)) {
        return with_packs<kMostPacks>(plan.packs, [&](auto p) {
          launch(rows_kernel<scalar_t, Op, kVec, decltype(p)::value, 0, false, true>, plan, op, tensors, rows, cols);
        });
      }
      break;
    case Variant::kRegisters:
      return with_packs<kMostPacks>(plan.packs, [&](auto p) {
        launch(rows_kernel<scalar_t, Op, kVec, decltype(p)::value, 0, false, false>, plan, op, tensors, rows, cols);
      });
  }
  OP_CHECK(false, "rowwise: the planner chose the ", variant_name(plan.variant), " kernel, which is not built");
}

// The engine's GPU side, as op.h's register_kernels calls it.
struct Cuda {
  template <typename Op>
  static void check(const Call& call) {
    check_rows<Op>(call);
  }
  template <typename Op>
  static std::vector<Tensor> outputs(const Call& call) {
    return row_outputs<Op>(call);
  }
  template <typename scalar_t, typename Op>
  static void run(const Op& op, const Call& call, const std::vector<Tensor>& out) {
    run_rows<scalar_t>(op, call, out);
  }
};

}  // namespace cuop_my_cuda_op::rowwise
