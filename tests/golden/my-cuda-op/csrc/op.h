// What every op of the package shares, whatever its math: a call's checked arguments, the
// functors' conventions, the dtype dispatch and the registration of an op's kernels. An op is
// declared once, in my_cuda_op/ops/<op>.py (its tensors, scalars and what its backward
// saves); the schemas made from that declaration are what this code reads, so nothing here or in
// an op's C++ repeats the op's signature.
//
// An op's math is a pair of functor templates on acc_t (float for float16/bfloat16/float32, double
// for float64): the forward's and the backward's. A functor's fields are the op's scalar
// parameters, in the declaration's order; it is built as Functor<acc_t>{scale, ...}. Its engine
// (engine/) calls it and says what it takes: an element functor (engine/elementwise.cuh) per
// element, its counts read off its operator(); a row functor (engine/rowwise.cuh) per row, its
// counts declared (kInputs, kRowInputs, kOutputs, kRowOutputs).
#pragma once

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/torch_api.h"

// Every C++ name of the project is in this namespace, which is also its torch.library namespace
// (torch.ops.cuop_my_cuda_op). The cuop_ prefix is the project's own: no name declared or
// macro defined by the headers the sources include (C and C++ libraries, CUDA, pybind11, torch)
// and no op namespace of torch starts with it, so no package name can make it collide; the
// template's tests check that prefix against those headers.
namespace cuop_my_cuda_op {

// The dtypes the kernels are built for. setup.py narrows them to one while iterating
// (OP_DTYPE=float32 pip install ...), so that an edit recompiles one instantiation, not four.
#if defined(OP_ONLY_FLOAT32)
#define OP_DTYPES ScalarType::Float
#else
#define OP_DTYPES ScalarType::Float, ScalarType::Half, ScalarType::BFloat16, ScalarType::Double
#endif

// What a functor returns for M outputs (M = 1: the value itself).
template <typename T, int kCount>
struct Values {
  T value[kCount];
  C10_HOST_DEVICE T& operator[](int i) { return value[i]; }
  C10_HOST_DEVICE const T& operator[](int i) const { return value[i]; }
};

// One call of an op, as the dispatcher (or the pybind11 module) hands it over: its schema (for the
// names in messages), its tensors and its scalars, each in the schema's order; reread: the inputs
// will be read again soon (a forward whose backward reads one of them), which the engines may
// tell the cache.
struct Call {
  const Schema* schema = nullptr;
  std::vector<Tensor> tensors;
  std::vector<Scalar> scalars;
  bool reread = false;
};

// Checks shared by every engine (op.cpp): each tensor defined, of a dtype this build has kernels
// for, on a device it has kernels for, all on one device with one dtype; and the functor's inputs,
// outputs and parameters against the schema. The engines add their shape rules.
void check_call(const Call& call, int inputs, int outputs, int params);
// The op's name in messages: the schema's without namespace and direction.
std::string op_name(const Schema& schema);
void check_same_shapes(const Call& call);
std::vector<Tensor> outputs_like_first(const Call& call, int count);
// Whether a forward's inputs are read again by its backward (a backward argument of the same name).
bool backward_reads_inputs(const Schema& forward, const Schema& backward);

namespace detail {

template <typename Functor>
struct AccOf;
template <template <typename> class Functor, typename acc_t>
struct AccOf<Functor<acc_t>> {
  using type = acc_t;
};

constexpr int kMaxArity = 6;

template <typename T, size_t>
using Repeat = T;

template <typename Op, typename acc_t, typename Seq>
struct InvocableWith;
template <typename Op, typename acc_t, size_t... kI>
struct InvocableWith<Op, acc_t, std::index_sequence<kI...>> : std::is_invocable<const Op&, Repeat<acc_t, kI>...> {};

// How many values the functor's operator() takes (0: none from 1 to kMaxArity).
template <typename Op, int kN = 1>
constexpr int arity() {
  if constexpr (kN > kMaxArity) {
    return 0;
  } else if constexpr (InvocableWith<Op, typename AccOf<Op>::type, std::make_index_sequence<kN>>::value) {
    return kN;
  } else {
    return arity<Op, kN + 1>();
  }
}

template <typename Op, typename Seq>
struct ResultOf;
template <typename Op, size_t... kI>
struct ResultOf<Op, std::index_sequence<kI...>> {
  using type = std::decay_t<std::invoke_result_t<const Op&, Repeat<typename AccOf<Op>::type, kI>...>>;
};

template <typename T>
struct ValueCount : std::integral_constant<int, 1> {};
template <typename T, int kCount>
struct ValueCount<Values<T, kCount>> : std::integral_constant<int, kCount> {};

// A row functor declares its tensors (kInputs ...); an element functor's follow from its operator().
template <typename Op, typename = void>
struct IsRowFunctor : std::false_type {};
template <typename Op>
struct IsRowFunctor<Op, std::void_t<decltype(Op::kRowOutputs)>> : std::true_type {};

// A row functor's per-row inputs, 0 where it declares none.
template <typename Op, typename = void>
struct RowInputs : std::integral_constant<int, 0> {};
template <typename Op>
struct RowInputs<Op, std::void_t<decltype(Op::kRowInputs)>> : std::integral_constant<int, Op::kRowInputs> {};

template <typename Op>
constexpr int input_count() {
  if constexpr (IsRowFunctor<Op>::value) {
    return Op::kInputs + RowInputs<Op>::value;
  } else {
    return arity<Op>();
  }
}

template <typename Op>
constexpr int output_count() {
  if constexpr (IsRowFunctor<Op>::value) {
    return Op::kOutputs + Op::kRowOutputs;
  } else {
    return ValueCount<typename ResultOf<Op, std::make_index_sequence<arity<Op>()>>::type>::value;
  }
}

// A parameter on its way into a functor's field, of whatever type the field has.
struct Param {
  const Scalar* scalar;
  template <typename T>
  operator T() const {  // NOLINT(google-explicit-constructor): converts into each field's type
    return scalar->to<T>();
  }
};

template <typename T, typename Seq, typename = void>
struct BracesWith : std::false_type {};
template <typename T, size_t... kI>
struct BracesWith<T, std::index_sequence<kI...>, std::void_t<decltype(T{(void(kI), Param{})...})>> : std::true_type {};

// A functor's fields: the most parameters it can be built from.
template <typename T, int kN = 8>
constexpr int field_count() {
  if constexpr (kN == 0 || BracesWith<T, std::make_index_sequence<kN>>::value) {
    return kN;
  } else {
    return field_count<T, kN - 1>();
  }
}

template <typename Op, size_t... kI>
Op make_functor(const std::vector<Scalar>& scalars, std::index_sequence<kI...>) {
  return Op{Param{&scalars[kI]}...};
}

template <typename acc_t, int kCount, typename Op, size_t... kI>
C10_HOST_DEVICE Values<acc_t, kCount> apply(const Op& op, const acc_t* args, std::index_sequence<kI...>) {
  if constexpr (kCount == 1) {
    return {op(args[kI]...)};
  } else {
    return op(args[kI]...);
  }
}

}  // namespace detail

// What a functor takes and gives: its input tensors (an element functor takes one value of each),
// output tensors (an element functor returns acc_t for one, Values<acc_t, M> for M) and parameters
// (its fields).
template <typename Op>
constexpr int kInputCount = detail::input_count<Op>();
template <typename Op>
constexpr int kOutputCount = detail::output_count<Op>();
template <typename Op>
constexpr int kParamCount = detail::field_count<Op>();

// The functor's outputs for the values of one element.
template <typename Op, typename acc_t, int kInputs>
C10_HOST_DEVICE Values<acc_t, kOutputCount<Op>> apply(const Op& op, const acc_t (&args)[kInputs]) {
  static_assert(kInputs == kInputCount<Op>, "one value per input tensor");
  return detail::apply<acc_t, kOutputCount<Op>>(op, args, std::make_index_sequence<kInputs>{});
}

// Runs the functor Fn<acc_t> of one direction with Engine (engine/): checks, contiguous inputs, the
// outputs, the dtype, the device.
template <typename Engine, template <typename> class Fn>
std::vector<Tensor> run(Call& call) {
  using Probe = Fn<float>;
  check_call(call, kInputCount<Probe>, kOutputCount<Probe>, kParamCount<Probe>);
  Engine::template check<Probe>(call);
  for (Tensor& t : call.tensors) {
    t = make_contiguous(t);
  }
  const DeviceGuard device_guard(call.tensors[0]);
  std::vector<Tensor> out = Engine::template outputs<Probe>(call);
  OP_DISPATCH_V2(call.tensors[0].scalar_type(), "my_cuda_op", AT_WRAP([&] {
                   using acc_t = opmath_t<scalar_t>;
                   using Op = Fn<acc_t>;
                   const Op op = detail::make_functor<Op>(call.scalars, std::make_index_sequence<kParamCount<Op>>{});
                   Engine::template run<scalar_t>(op, call, out);
                 }),
                 OP_DTYPES);
  return out;
}

// The kernels of one op on one device: Engine runs Forward<acc_t> for `<name>_fwd` and
// Backward<acc_t> for `<name>_bwd`. An op's .cu (and its _cpu.cpp) call this once, at load time:
//   const bool kRegistered = register_kernels<elementwise::Cuda, MyForward, MyBackward>("my_op", kCuda);
enum Device { kCuda, kCpu };

using Kernel = std::vector<Tensor> (*)(Call&);
// The stable ABI calls a kernel boxed (its arguments on a stack) through a plain function, which
// holds no state: one function per kernel, which op.cpp's run_boxed gives the kernel.
using Boxed = void (*)(StableIValue* stack, uint64_t num_args, uint64_t num_outputs);
void run_boxed(Kernel kernel, StableIValue* stack, uint64_t num_args, uint64_t num_outputs);
template <Kernel kKernel>
void boxed(StableIValue* stack, uint64_t num_args, uint64_t num_outputs) {
  run_boxed(kKernel, stack, num_args, num_outputs);
}
struct KernelRef {
  Kernel kernel;
  Boxed boxed;
};
template <Kernel kKernel>
constexpr KernelRef kernel_of() {
  return {kKernel, &boxed<kKernel>};
}
// Records one kernel of an op (op.cpp): `<name>_fwd` / `<name>_bwd` on a device.
bool add_kernel(const std::string& name, Device device, KernelRef kernel, bool forward);
// The schemas the package declares (_registration.cpp, from my_cuda_op/_registration.py),
// which the stable ABI does not describe: the checks' names and the scalars' types.
void declare(const std::string& forward, const std::string& backward);

template <typename Engine, template <typename> class Forward, template <typename> class Backward>
bool register_kernels(const char* op_name, Device device) {
  return add_kernel(std::string(op_name) + "_fwd", device, kernel_of<&run<Engine, Forward>>(), /*forward=*/true) &&
         add_kernel(std::string(op_name) + "_bwd", device, kernel_of<&run<Engine, Backward>>(), /*forward=*/false);
}

}  // namespace cuop_my_cuda_op
