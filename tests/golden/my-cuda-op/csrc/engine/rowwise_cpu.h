// The rowwise engine on the CPU: the same row functor as the CUDA kernels (rowwise.cuh describes
// it), rows in parallel (parallel_for: at::parallel_for, or the stable ABI's), each row's passes,
// row outputs and outputs in turn.
//
// A pass combines its row's terms pairwise (cascade summation): runs of kRun terms one after
// another, then the runs' partials in a balanced tree. Added one after another, every addition
// rounds to the running total, and over a long row the error grows with its length (a float32 sum
// of tens of thousands of terms drifts past float32's tolerance); in a tree it grows with the depth,
// as in the GPU kernels' reductions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "engine/rowwise_op.h"

namespace cuop_my_cuda_op::rowwise {
namespace cpu {

// Elements per parallel task: rows are grouped until a task has about this many.
constexpr int64_t kGrainElements = 32768;
// Terms a pass adds one after another before the partials are combined pairwise.
constexpr int64_t kRun = 32;
// Rows wider than this take an op's online form (kOnline: both passes at once), as the GPU's rows
// too wide for registers do, so that the CPU tests check that form of the op on their widest rows.
constexpr int64_t kOnlineCols = 65536;

inline int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, kGrainElements / std::max<int64_t>(cols, 1)); }

// One row of the op: in[i] its elements in input i, row_in[m] its value of per-row input m, out[m]
// its elements in output m, row_out[m] its value of row output m.
template <typename scalar_t, typename Op>
class OneRow {
 public:
  using acc_t = opmath_t<scalar_t>;
  using Sums = typename Op::Sums;
  using Row = typename Op::Row;

  OneRow(const Op& op, const scalar_t* const* in, int64_t cols) : op_(op), in_(in), cols_(cols) {}

  void run(const scalar_t* const* row_in, scalar_t* const* out, scalar_t* const* row_out) {
    if constexpr (kRowInputsOf<Op> > 0) {
      acc_t values[kRowInputsOf<Op>];
      for (int m = 0; m < kRowInputsOf<Op>; ++m) {
        values[m] = static_cast<acc_t>(*row_in[m]);
      }
      op_.start(values, row_);
    }
    if constexpr (kOnlineOf<Op>) {
      if (cols_ > kOnlineCols) {
        const Online all = online(0, cols_);
        op_.finish(0, all.first, cols_, row_);
        op_.finish(1, op_.rescale(all.seen, row_, all.second), cols_, row_);
      } else {
        pass(std::make_integer_sequence<int, Op::kPasses>{});
      }
    } else {
      pass(std::make_integer_sequence<int, Op::kPasses>{});
    }
    if constexpr (Op::kRowOutputs > 0) {
      acc_t values[Op::kRowOutputs];
      op_.row_outputs(row_, values);
      for (int m = 0; m < Op::kRowOutputs; ++m) {
        *row_out[m] = static_cast<scalar_t>(values[m]);
      }
    }
    if constexpr (Op::kOutputs > 0) {
      for (int64_t j = 0; j < cols_; ++j) {
        acc_t vals[Op::kInputs];
        element(j, vals);
        if constexpr (kKeepTermOf<Op>) {
          const Sums term = op_.term(Op::kPasses - 1, vals, row_);
          std::memcpy(&vals[0], &term, sizeof(acc_t));
        }
        acc_t values[Op::kOutputs];
        op_.outputs(vals, row_, values);
        for (int m = 0; m < Op::kOutputs; ++m) {
          out[m][j] = static_cast<scalar_t>(values[m]);
        }
      }
    }
  }

 private:
  template <int... kP>
  void pass(std::integer_sequence<int, kP...>) {
    (op_.finish(kP, reduce<kP>(0, cols_), cols_, row_), ...);
  }

  void element(int64_t j, acc_t (&vals)[Op::kInputs]) const {
    for (int i = 0; i < Op::kInputs; ++i) {
      vals[i] = static_cast<acc_t>(in_[i][j]);
    }
  }

  // The terms of elements [begin, end) of pass kP, combined: a run at a time, the runs halved.
  template <int kP>
  Sums reduce(int64_t begin, int64_t end) const {
    if (end - begin <= kRun) {
      Sums sums = op_.identity(kP);
      for (int64_t j = begin; j < end; ++j) {
        acc_t vals[Op::kInputs];
        element(j, vals);
        sums = op_.combine(kP, sums, op_.term(kP, vals, row_));
      }
      return sums;
    }
    const int64_t runs = (end - begin + kRun - 1) / kRun;
    const int64_t middle = begin + runs / 2 * kRun;
    return op_.combine(kP, reduce<kP>(begin, middle), reduce<kP>(middle, end));
  }

  // An online reduction of some elements (kOnline): pass 0's sums, the row they make (its finish),
  // and pass 1's sums under that row. Two such combine by rescaling each one's pass-1 sums to the
  // row of their pass-0 sums combined, so the runs combine pairwise as in reduce.
  struct Online {
    Sums first;
    Row seen;
    Sums second;
  };

  Online online(int64_t begin, int64_t end) const {
    if (end - begin <= kRun) {
      Online part{reduce<0>(begin, end), row_, op_.identity(1)};
      op_.finish(0, part.first, cols_, part.seen);
      for (int64_t j = begin; j < end; ++j) {
        acc_t vals[Op::kInputs];
        element(j, vals);
        part.second = op_.combine(1, part.second, op_.term(1, vals, part.seen));
      }
      return part;
    }
    const int64_t runs = (end - begin + kRun - 1) / kRun;
    const int64_t middle = begin + runs / 2 * kRun;
    const Online a = online(begin, middle);
    const Online b = online(middle, end);
    Online both{op_.combine(0, a.first, b.first), row_, op_.identity(1)};
    op_.finish(0, both.first, cols_, both.seen);
    both.second = op_.combine(1, op_.rescale(a.seen, both.seen, a.second), op_.rescale(b.seen, both.seen, b.second));
    return both;
  }

  const Op& op_;
  const scalar_t* const* in_;
  int64_t cols_;
  Row row_{};
};

}  // namespace cpu

// The engine's CPU side, as op.h's register_kernels calls it: the same checks and outputs as the
// GPU's (rowwise_op.h), the rows in parallel.
struct Cpu {
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
    check_row_op<Op, opmath_t<scalar_t>>();
    const Layout<Op> layout = layout_of<Op>(call);
    const int64_t cols = layout.cols;
    if (cols == 0 && Op::kRowOutputs == 0) {
      return;
    }
    constexpr int kRowIn = kRowInputsOf<Op>;
    const scalar_t* in[Op::kInputs];
    const scalar_t* row_in[kRowIn > 0 ? kRowIn : 1] = {};
    scalar_t* dst[Op::kOutputs > 0 ? Op::kOutputs : 1] = {};
    scalar_t* row_dst[Op::kRowOutputs > 0 ? Op::kRowOutputs : 1] = {};
    for (int i = 0; i < Op::kInputs; ++i) {
      in[i] = call.tensors[layout.index[i]].template const_data_ptr<scalar_t>();
    }
    for (int m = 0; m < kRowIn; ++m) {
      row_in[m] = call.tensors[layout.index[Op::kInputs + m]].template const_data_ptr<scalar_t>();
    }
    for (int m = 0; m < Op::kOutputs; ++m) {
      dst[m] = out[m].mutable_data_ptr<scalar_t>();
    }
    for (int m = 0; m < Op::kRowOutputs; ++m) {
      row_dst[m] = out[Op::kOutputs + m].template mutable_data_ptr<scalar_t>();
    }
    parallel_for(0, layout.rows, cpu::row_grain(cols), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const scalar_t* row_inputs[Op::kInputs];
        for (int i = 0; i < Op::kInputs; ++i) {
          row_inputs[i] = in[i] + row * cols;
        }
        const scalar_t* row_values[kRowIn > 0 ? kRowIn : 1] = {};
        for (int m = 0; m < kRowIn; ++m) {
          row_values[m] = row_in[m] + row;
        }
        scalar_t* row_outputs[Op::kOutputs > 0 ? Op::kOutputs : 1] = {};
        for (int m = 0; m < Op::kOutputs; ++m) {
          row_outputs[m] = dst[m] + row * cols;
        }
        scalar_t* row_results[Op::kRowOutputs > 0 ? Op::kRowOutputs : 1] = {};
        for (int m = 0; m < Op::kRowOutputs; ++m) {
          row_results[m] = row_dst[m] + row;
        }
        cpu::OneRow<scalar_t, Op>(op, row_inputs, cols).run(row_values, row_outputs, row_results);
      }
    });
  }
};

}  // namespace cuop_my_cuda_op::rowwise
