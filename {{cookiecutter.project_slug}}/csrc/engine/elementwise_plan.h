// How the elementwise engine covers a tensor: one pure function of what a call moves and of the
// GPU, with no CUDA or torch in it, so that tests/test_plans.py checks its answers on any machine.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

namespace {{cookiecutter.__ns}}::elementwise {

// Bytes per vector access: 16 bytes compile to one LDG.128 / STG.128 per thread.
constexpr int kVecBytes = 16;
constexpr int kWarpSize = 32;
// The most 16-byte packs a thread holds of all its inputs at once: 16 packs are 64 registers,
// which a 256-thread block can spare without spilling.
constexpr int kMaxPacksInFlight = 16;

// What one call moves.
struct Problem {
  int64_t numel = 0;     // elements of each tensor
  int elem_bytes = 4;    // bytes per element (every tensor has the dtype of the first input)
  bool is_float = true;  // a 4-byte float (float32), which takes its own shapes below
  int inputs = 1;        // tensors read per element
  int outputs = 1;       // tensors written per element
  bool aligned = true;   // every pointer on a 16-byte boundary: whole packs, else one element at a time
  bool reread = false;   // the inputs are read again soon (the backward reads what the forward saves)
};

// What the GPU is like: whether its memory is fast per SM (gpu.h), which needs more bytes in flight.
struct Gpu {
  bool fast_memory = false;
};

// The launch: `threads` per block, `packs` per thread (each loaded before any is used, so they are
// in flight together), `vec` elements per pack, `blocks` in the grid; `evict_last`: the loads are
// marked to stay in L2.
struct Plan {
  int threads = 0;
  int packs = 0;
  int vec = 1;
  bool evict_last = false;
  int64_t blocks = 0;
};

// The rule: a memory-bound kernel keeps an SM's share of the bandwidth busy only with enough bytes
// in flight, and a GPU whose memory is faster per SM needs more of them (the performance page has
// the measurements behind each shape).
// - Slower memory per SM: blocks of 512 threads of one pack each; 8-byte elements 256 threads of 4
//   packs, whose longer arithmetic (float64) needs more independent work per thread to hide its
//   latency, and whose registers allow one 512-thread block per SM only.
// - Faster memory per SM: 128 threads holding 2 packs of input in flight (one input: 2 packs;
//   two or more: one pack of each); float32 with more than one input 256 threads of 4 packs each.
//   float32 with one input marks its loads evict_last when they are read again soon, as
//   torch.compile's Triton kernels mark a tensor that is read again, so the next kernel (the
//   backward) finds part of it in L2.
// - Packs never exceed kMaxPacksInFlight across the inputs; one element per thread where a pointer
//   is not 16-byte aligned.
// The grid takes one block per threads * packs work items (the hardware hands a new block to an SM
// as soon as one retires, so no SM waits at the end), capped at 2^31 - 1 blocks, past which the
// kernel loops.
// shape() is everything but the grid, and constexpr: the engine instantiates just the kernels it
// can choose.
constexpr Plan shape(const Problem& p, const Gpu& gpu) {
  Plan out;
  const int inputs = std::max(1, p.inputs);
  if (!gpu.fast_memory) {
    out.threads = p.elem_bytes == 8 ? 256 : 512;
    out.packs = p.elem_bytes == 8 ? 4 : 1;
  } else if (p.is_float && inputs > 1) {
    out.threads = 256;
    out.packs = 4;
  } else {
    out.threads = 128;
    out.packs = std::max(1, 2 / inputs);
    out.evict_last = p.is_float && inputs == 1 && p.reread;
  }
  out.packs = std::max(1, std::min(out.packs, kMaxPacksInFlight / inputs));
  out.vec = p.aligned ? std::max(1, kVecBytes / std::max(1, p.elem_bytes)) : 1;
  out.evict_last = out.evict_last && p.aligned;
  return out;
}

inline Plan plan(const Problem& p, const Gpu& gpu) {
  Plan out = shape(p, gpu);
  const int64_t work_items = (p.numel + out.vec - 1) / out.vec;
  const int64_t per_block = int64_t(out.threads) * out.packs;
  out.blocks = std::min<int64_t>((work_items + per_block - 1) / per_block, std::numeric_limits<int32_t>::max());
  return out;
}

}  // namespace {{cookiecutter.__ns}}::elementwise
