// The rowwise engine's host side, shared by its GPU (rowwise.cuh) and CPU (rowwise_cpu.h) halves:
// what a row functor may leave out, the checks of a call's rows and the outputs it gets.
//
// A call's tensors are the functor's kInputs tensors shaped like x and its kRowInputs tensors of one
// value per row (shape x.shape[:-1]), in the schema's order, which may mix them (a backward takes
// the outputs' gradients first, then the saved tensors); the engine tells them apart by their
// dimensions and keeps each kind in order. The outputs are kOutputs tensors shaped like x, then
// kRowOutputs of one value per row, as the op's declaration (ops/<op>.py) lists them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/rowwise_plan.h"
#include "op.h"

namespace cuop_my_cuda_op::rowwise {

// The most tensors of each kind a row functor may take and give (the kernels' parameters; kMaxInputs
// is the planner's).
constexpr int kMaxRowInputs = 2;
constexpr int kMaxOutputs = 2;

// Members a row functor may leave out: kRowInputs (0), kKeepTerm (false), kOnline (false).
template <typename Op>
constexpr int kRowInputsOf = detail::RowInputs<Op>::value;

template <typename Op, typename = void>
struct KeepTerm : std::false_type {};
template <typename Op>
struct KeepTerm<Op, std::void_t<decltype(Op::kKeepTerm)>> : std::bool_constant<Op::kKeepTerm> {};
template <typename Op>
constexpr bool kKeepTermOf = KeepTerm<Op>::value;

template <typename Op, typename = void>
struct Online : std::false_type {};
template <typename Op>
struct Online<Op, std::void_t<decltype(Op::kOnline)>> : std::bool_constant<Op::kOnline> {};
template <typename Op>
constexpr bool kOnlineOf = Online<Op>::value;

// What the engine asks of a row functor, checked at compile time where it is used.
template <typename Op, typename acc_t>
constexpr void check_row_op() {
  using Sums = typename Op::Sums;
  static_assert(Op::kInputs >= 1 && Op::kInputs <= kMaxInputs, "a row op reads 1 to 3 tensors shaped like x");
  static_assert(kRowInputsOf<Op> >= 0 && kRowInputsOf<Op> <= kMaxRowInputs, "a row op reads 0 to 2 per-row tensors");
  static_assert(Op::kOutputs >= 0 && Op::kOutputs <= kMaxOutputs, "a row op writes 0 to 2 outputs per element");
  static_assert(Op::kRowOutputs >= 0 && Op::kRowOutputs <= kMaxOutputs, "a row op writes 0 to 2 values per row");
  static_assert(Op::kOutputs + Op::kRowOutputs > 0, "a row op writes something");
  static_assert(Op::kPasses >= 0, "a row op reduces its row 0 or more times");
  static_assert(!kOnlineOf<Op> || Op::kPasses == 2, "kOnline fuses a row op's two passes into one");
  static_assert(std::is_trivially_copyable_v<Sums> && sizeof(Sums) % sizeof(acc_t) == 0,
                "Sums is a struct of acc_t fields");
  static_assert(std::is_trivially_copyable_v<typename Op::Row>, "Row is a struct of plain fields");
}

// Where a call's tensors are: index[k] of the call's tensors is the k-th tensor shaped like x
// (k < kInputs), then the per-row ones; `first` is the first shaped like x, whose sizes the others
// follow.
template <typename Op>
struct Layout {
  int index[Op::kInputs + (kRowInputsOf<Op> > 0 ? kRowInputsOf<Op> : 0)];
  int first;
  int64_t rows;
  int64_t cols;
};

// The call's tensors sorted into those shaped like x and the per-row ones, with checks whose
// messages name the argument and say what to pass (built only when a check fails: every call
// passes these, and none allocates). The dimension count tells them apart: x's, or one fewer.
template <typename Op>
Layout<Op> layout_of(const Call& call) {
  const auto& args = call.schema->arguments();
  const int count = int(call.tensors.size());
  int64_t dims = 0;
  for (const Tensor& t : call.tensors) {
    dims = std::max<int64_t>(dims, t.dim());
  }
  Layout<Op> layout{};
  int full = 0;
  int per_row = Op::kInputs;
  layout.first = -1;
  for (int i = 0; i < count; ++i) {
    const bool row_tensor = kRowInputsOf<Op> > 0 && call.tensors[i].dim() == dims - 1;
    int& next = row_tensor ? per_row : full;
    OP_CHECK(next < (row_tensor ? Op::kInputs + kRowInputsOf<Op> : Op::kInputs), op_name(*call.schema), ": ",
             args[i].name(), " has shape ", call.tensors[i].sizes(), ", but the op takes ", Op::kInputs,
             " tensors shaped like x and ", kRowInputsOf<Op>, " of one value per row (x.shape[:-1])");
    layout.index[next++] = i;
    if (!row_tensor && layout.first < 0) {
      layout.first = i;
    }
  }
  const Tensor& x = call.tensors[layout.first];
  OP_CHECK(x.dim() >= 1, op_name(*call.schema), ": ", args[layout.first].name(),
           " is a 0-d tensor, but the op reduces over the last dimension; pass a tensor with at least one "
           "dimension (e.g. ",
           args[layout.first].name(), ".reshape(1))");
  const IntArrayRef sizes = x.sizes();
  const IntArrayRef row_sizes = sizes.slice(0, sizes.size() - 1);
  for (int k = 0; k < Op::kInputs + kRowInputsOf<Op>; ++k) {
    const Tensor& t = call.tensors[layout.index[k]];
    const bool row_tensor = k >= Op::kInputs;
    OP_CHECK(
        t.sizes().equals(row_tensor ? row_sizes : sizes), op_name(*call.schema), ": ", args[layout.index[k]].name(),
        " has shape ", t.sizes(), " but ", args[layout.first].name(), " has shape ", sizes, "; ",
        row_tensor ? "a per-row tensor has its shape without the last dimension" : "they must have the same shape");
  }
  // Rows of no element still have their per-row outputs: the passes' results over nothing.
  layout.cols = sizes.back();
  layout.rows = 1;
  for (const int64_t size : row_sizes) {
    layout.rows *= size;
  }
  return layout;
}

// The call's outputs: kOutputs like x, then kRowOutputs of x.shape[:-1], all contiguous.
template <typename Op>
std::vector<Tensor> row_outputs(const Call& call) {
  const Tensor& x = call.tensors[layout_of<Op>(call).first];
  std::vector<Tensor> out;
  for (int m = 0; m < Op::kOutputs; ++m) {
    out.push_back(new_contiguous_like(x));
  }
  for (int m = 0; m < Op::kRowOutputs; ++m) {
    out.push_back(new_contiguous(x, x.sizes().slice(0, x.dim() - 1)));
  }
  return out;
}

// What both halves' check() does: the rows' shapes (layout_of throws where they do not fit).
template <typename Op>
void check_rows(const Call& call) {
  (void)layout_of<Op>(call);
}

}  // namespace cuop_my_cuda_op::rowwise
