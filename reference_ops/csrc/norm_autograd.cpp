// The ops' autograd kernels, registered to the Autograd key in registration.cpp (as torchvision
// does for its ops). Autograd runs here, in C++, rather than in Python (torch.library's
// register_autograd): recording a call and running its backward then cost what a native torch op
// costs, and the public ops decide here, per call, whether the statistics are needed at all.
//
// Every kernel calls the ops through the dispatcher, below autograd, never norm.cpp's functions
// directly: under torch.compile, FakeTensor and functionalization the call then reaches the fake
// kernels and the tracer, so AOTAutograd traces through these kernels and records *_fwd / *_bwd /
// *_inference in its graphs. Nothing here reads tensor sizes, which are symbolic under dynamic
// shapes.
//
// The public ops (layer_norm, rms_norm and the fused residual ops), called once per norm layer per
// step, record a hand-written autograd node (NormBackward), as torch's generated code does for its
// own ops: no per-call AutogradContext, saved_data dictionary or output wrapping of
// torch::autograd::Function, which cost them several microseconds more than torch's native norms.
// The *_fwd ops, for callers that want the statistics, keep the shorter torch::autograd::Function.
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>

#include <memory>
#include <mutex>
#include <string>
#include <type_traits>

#include "norm.h"

namespace reference_ops::autograd {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// -----------------------------------------------------------------------------
// The ops, as the dispatcher holds them
// -----------------------------------------------------------------------------

// Each op's name, its C++ signature (that of its checked entry point in norm.h) and, for the ops
// without a derivative, the error their backward raises.
struct LayerNormFwdOp {
  static constexpr const char* kName = "reference_ops::layer_norm_fwd";
  using Sig = decltype(reference_ops::layer_norm_fwd);
};
struct RmsNormFwdOp {
  static constexpr const char* kName = "reference_ops::rms_norm_fwd";
  using Sig = decltype(reference_ops::rms_norm_fwd);
};

constexpr const char* kNoBackwardOfInference =
    "reference_ops: the *_inference ops save no statistics and have no backward; call "
    "reference_ops.layer_norm / rms_norm (or the *_fwd ops), which keep them when a gradient is wanted";
struct LayerNormInferenceOp {
  static constexpr const char* kName = "reference_ops::layer_norm_inference";
  using Sig = decltype(reference_ops::layer_norm_inference);
  static constexpr const char* kNoDerivative = kNoBackwardOfInference;
};
struct RmsNormInferenceOp {
  static constexpr const char* kName = "reference_ops::rms_norm_inference";
  using Sig = decltype(reference_ops::rms_norm_inference);
  static constexpr const char* kNoDerivative = kNoBackwardOfInference;
};

// A gradient of a gradient goes through the *_bwd ops, which have no derivative: say so, and what
// to use, rather than return a silently wrong (zero) second derivative.
constexpr const char* kNoDoubleBackward =
    "reference_ops: double backward (differentiating a gradient of layer_norm / rms_norm, e.g. "
    "torch.autograd.grad(..., create_graph=True) and then backward through the result) is not "
    "supported: the *_bwd ops have no derivative. Use torch.nn.functional.layer_norm / rms_norm (or "
    "torch.nn.LayerNorm / RMSNorm) where a second derivative is needed";
struct LayerNormBwdOp {
  static constexpr const char* kName = "reference_ops::layer_norm_bwd";
  using Sig = decltype(reference_ops::layer_norm_bwd);
  static constexpr const char* kNoDerivative = kNoDoubleBackward;
};
struct RmsNormBwdOp {
  static constexpr const char* kName = "reference_ops::rms_norm_bwd";
  using Sig = decltype(reference_ops::rms_norm_bwd);
  static constexpr const char* kNoDerivative = kNoDoubleBackward;
};

// The fused residual ops. Below autograd the public ops are their inference kernels.
struct AddLayerNormOp {
  static constexpr const char* kName = "reference_ops::add_layer_norm";
  using Sig = decltype(reference_ops::add_layer_norm_inference);
};
struct AddRmsNormOp {
  static constexpr const char* kName = "reference_ops::add_rms_norm";
  using Sig = decltype(reference_ops::add_rms_norm_inference);
};
struct AddLayerNormFwdOp {
  static constexpr const char* kName = "reference_ops::add_layer_norm_fwd";
  using Sig = decltype(reference_ops::add_layer_norm_fwd);
};
struct AddRmsNormFwdOp {
  static constexpr const char* kName = "reference_ops::add_rms_norm_fwd";
  using Sig = decltype(reference_ops::add_rms_norm_fwd);
};
struct AddNormBwdOp {
  static constexpr const char* kName = "reference_ops::add_norm_bwd";
  using Sig = decltype(reference_ops::add_norm_bwd);
  static constexpr const char* kNoDerivative = kNoDoubleBackward;
};

// The op's dispatcher handle, looked up once.
template <class Op>
const c10::TypedOperatorHandle<typename Op::Sig>& op() {
  static const auto handle =
      c10::Dispatcher::singleton().findSchemaOrThrow(Op::kName, "").template typed<typename Op::Sig>();
  return handle;
}

// The op's kernel for the inputs' device, below autograd.
template <class Op, class... Args>
auto call_below(const Args&... args) {
  const at::AutoDispatchBelowADInplaceOrView below;
  return op<Op>().call(args...);
}

// -----------------------------------------------------------------------------
// Whether autograd records a call
// -----------------------------------------------------------------------------

bool requires_grad(const at::Tensor& t) { return t.requires_grad(); }
bool requires_grad(const std::optional<at::Tensor>& t) { return t.has_value() && t->requires_grad(); }
template <class T>
bool requires_grad(const T& /*not a tensor*/) {
  return false;
}

// What torch's own ops check: grad mode on and an input that requires grad.
template <class... Args>
bool records(const Args&... args) {
  return at::GradMode::is_enabled() && (requires_grad(args) || ...);
}

std::optional<at::Tensor> defined_or_none(const at::Tensor& t) {
  return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt;
}

variable_list to_list(const at::Tensor& t) { return {t}; }
template <class... Ts>
variable_list to_list(const std::tuple<Ts...>& t) {
  return std::apply([](const auto&... e) { return variable_list{e...}; }, t);
}

template <class Result>
Result from_list(const variable_list& v) {
  if constexpr (std::is_same_v<Result, at::Tensor>) {
    return v[0];
  } else if constexpr (std::tuple_size_v<Result> == 2) {
    return {v[0], v[1]};
  } else if constexpr (std::tuple_size_v<Result> == 3) {
    return {v[0], v[1], v[2]};
  } else {
    return {v[0], v[1], v[2], v[3]};
  }
}

// -----------------------------------------------------------------------------
// Ops without a derivative: *_inference and *_bwd
// -----------------------------------------------------------------------------

// Runs the op below autograd; the recorded outputs' backward raises Op::kNoDerivative.
template <class Op>
struct NoDerivativeFunction : public torch::autograd::Function<NoDerivativeFunction<Op>> {
  template <class... Args>
  static variable_list forward(AutogradContext* /*ctx*/, const Args&... args) {
    return to_list(call_below<Op>(args...));
  }
  static variable_list backward(AutogradContext* /*ctx*/, const variable_list& /*grads*/) {
    TORCH_CHECK(false, Op::kNoDerivative);
    return {};
  }
};

// Not recorded (the common case: no grad mode, or nothing requires grad): no autograd node at all.
template <class Op, class... Args>
auto no_derivative(const Args&... args) {
  using Result = decltype(op<Op>().call(args...));
  if (records(args...)) {
    return from_list<Result>(NoDerivativeFunction<Op>::apply(args...));
  }
  return call_below<Op>(args...);
}

// The *_bwd op, from a backward. Under create_graph (grad mode on in the backward) through its
// autograd kernel, which records it, so that a double backward raises kNoDoubleBackward; otherwise
// straight below autograd (one dispatch less).
template <class Op, class... Args>
auto call_bwd(const Args&... args) {
  if (at::GradMode::is_enabled()) {
    return op<Op>().call(args...);
  }
  return call_below<Op>(args...);
}

// -----------------------------------------------------------------------------
// The fused residual ops' gradients
// -----------------------------------------------------------------------------

// The gradients of x, residual, weight and bias from those of y (dy) and h (dh), either of which
// may be absent (an output not used). x and residual both receive the gradient of h; x's in its
// own dtype when that is narrower.
struct AddNormGrads {
  at::Tensor dx;
  at::Tensor dresidual;
  at::Tensor dweight;
  at::Tensor dbias;
};

AddNormGrads add_norm_grads(const at::Tensor& dy, const at::Tensor& dh, const at::Tensor& h,
                            const std::optional<at::Tensor>& mean, const at::Tensor& rstd,
                            c10::IntArrayRef normalized_shape, const std::optional<at::Tensor>& weight,
                            const std::optional<at::Tensor>& bias, c10::ScalarType x_dtype) {
  if (!dy.defined()) {
    return {dh.defined() ? dh.to(x_dtype) : at::Tensor(), dh, at::Tensor(), at::Tensor()};
  }
  auto [dsum, dx, dweight, dbias] =
      call_bwd<AddNormBwdOp>(dy, defined_or_none(dh), h, mean, rstd, normalized_shape, weight, bias, x_dtype);
  return {x_dtype == h.scalar_type() ? dsum : dx, dsum, weight ? dweight : at::Tensor(), bias ? dbias : at::Tensor()};
}

// -----------------------------------------------------------------------------
// The *_fwd ops: torch::autograd::Function
// -----------------------------------------------------------------------------

// The *_fwd ops return the statistics too, without a gradient; when only they are used, no
// gradient reaches the inputs. Saved: the normalised input (x, or h for the fused ops), the
// statistics and the parameters (an absent one as an undefined tensor) and normalized_shape (as
// ints: x's sizes may be symbolic when traced).
struct LayerNormFwdFunction : public torch::autograd::Function<LayerNormFwdFunction> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, c10::IntArrayRef normalized_shape,
                               const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
                               double eps) {
    auto [y, mean, rstd] = call_below<LayerNormFwdOp>(x, normalized_shape, weight, bias, eps);
    ctx->save_for_backward({x, mean, rstd, weight.value_or(at::Tensor()), bias.value_or(at::Tensor())});
    ctx->saved_data["normalized_shape"] = normalized_shape.vec();
    ctx->set_materialize_grads(false);  // no zero tensors (and fill kernels) for unused outputs
    ctx->mark_non_differentiable({mean, rstd});
    return {y, mean, rstd};
  }

  // One gradient per forward argument: x, normalized_shape, weight, bias, eps.
  static variable_list backward(AutogradContext* ctx, const variable_list& grads) {
    const at::Tensor& dy = grads[0];
    if (!dy.defined()) {
      return variable_list(5);
    }
    const variable_list saved = ctx->get_saved_variables();
    const std::optional<at::Tensor> weight = defined_or_none(saved[3]);
    const std::optional<at::Tensor> bias = defined_or_none(saved[4]);
    const std::vector<int64_t> normalized_shape = ctx->saved_data["normalized_shape"].toIntVector();
    auto [dx, dweight, dbias] =
        call_bwd<LayerNormBwdOp>(dy, saved[0], saved[1], saved[2], normalized_shape, weight, bias);
    return {dx, at::Tensor(), weight ? dweight : at::Tensor(), bias ? dbias : at::Tensor(), at::Tensor()};
  }
};

struct RmsNormFwdFunction : public torch::autograd::Function<RmsNormFwdFunction> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, c10::IntArrayRef normalized_shape,
                               const std::optional<at::Tensor>& weight, double eps) {
    auto [y, rstd] = call_below<RmsNormFwdOp>(x, normalized_shape, weight, eps);
    ctx->save_for_backward({x, rstd, weight.value_or(at::Tensor())});
    ctx->saved_data["normalized_shape"] = normalized_shape.vec();
    ctx->set_materialize_grads(false);
    ctx->mark_non_differentiable({rstd});
    return {y, rstd};
  }

  // x, normalized_shape, weight, eps.
  static variable_list backward(AutogradContext* ctx, const variable_list& grads) {
    const at::Tensor& dy = grads[0];
    if (!dy.defined()) {
      return variable_list(4);
    }
    const variable_list saved = ctx->get_saved_variables();
    const std::optional<at::Tensor> weight = defined_or_none(saved[2]);
    const std::vector<int64_t> normalized_shape = ctx->saved_data["normalized_shape"].toIntVector();
    auto [dx, dweight] = call_bwd<RmsNormBwdOp>(dy, saved[0], saved[1], normalized_shape, weight);
    return {dx, at::Tensor(), weight ? dweight : at::Tensor(), at::Tensor()};
  }
};

struct AddLayerNormFwdFunction : public torch::autograd::Function<AddLayerNormFwdFunction> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& residual,
                               c10::IntArrayRef normalized_shape, const std::optional<at::Tensor>& weight,
                               const std::optional<at::Tensor>& bias, double eps,
                               std::optional<c10::ScalarType> out_dtype) {
    auto [y, h, mean, rstd] =
        call_below<AddLayerNormFwdOp>(x, residual, normalized_shape, weight, bias, eps, out_dtype);
    ctx->save_for_backward({h, mean, rstd, weight.value_or(at::Tensor()), bias.value_or(at::Tensor())});
    ctx->saved_data["normalized_shape"] = normalized_shape.vec();
    ctx->saved_data["x_dtype"] = x.scalar_type();
    ctx->set_materialize_grads(false);
    ctx->mark_non_differentiable({mean, rstd});
    return {y, h, mean, rstd};
  }

  // x, residual, normalized_shape, weight, bias, eps, out_dtype.
  static variable_list backward(AutogradContext* ctx, const variable_list& grads) {
    const variable_list saved = ctx->get_saved_variables();
    const AddNormGrads g = add_norm_grads(grads[0], grads[1], saved[0], saved[1], saved[2],
                                          ctx->saved_data["normalized_shape"].toIntVector(), defined_or_none(saved[3]),
                                          defined_or_none(saved[4]), ctx->saved_data["x_dtype"].toScalarType());
    return {g.dx, g.dresidual, at::Tensor(), g.dweight, g.dbias, at::Tensor(), at::Tensor()};
  }
};

struct AddRmsNormFwdFunction : public torch::autograd::Function<AddRmsNormFwdFunction> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& residual,
                               c10::IntArrayRef normalized_shape, const std::optional<at::Tensor>& weight, double eps,
                               std::optional<c10::ScalarType> out_dtype) {
    auto [y, h, rstd] = call_below<AddRmsNormFwdOp>(x, residual, normalized_shape, weight, eps, out_dtype);
    ctx->save_for_backward({h, rstd, weight.value_or(at::Tensor())});
    ctx->saved_data["normalized_shape"] = normalized_shape.vec();
    ctx->saved_data["x_dtype"] = x.scalar_type();
    ctx->set_materialize_grads(false);
    ctx->mark_non_differentiable({rstd});
    return {y, h, rstd};
  }

  // x, residual, normalized_shape, weight, eps, out_dtype.
  static variable_list backward(AutogradContext* ctx, const variable_list& grads) {
    const variable_list saved = ctx->get_saved_variables();
    const AddNormGrads g = add_norm_grads(grads[0], grads[1], saved[0], std::nullopt, saved[1],
                                          ctx->saved_data["normalized_shape"].toIntVector(), defined_or_none(saved[2]),
                                          std::nullopt, ctx->saved_data["x_dtype"].toScalarType());
    return {g.dx, g.dresidual, at::Tensor(), g.dweight, at::Tensor(), at::Tensor()};
  }
};

// -----------------------------------------------------------------------------
// The public ops: a hand-written node
// -----------------------------------------------------------------------------

// The node a call of a public op records, one class per op: layer_norm / rms_norm (y = norm(x);
// next edges x, weight, bias) and, with kAdd, add_layer_norm / add_rms_norm ((y, h); next edges x,
// residual, weight, bias). RMSNorm has no bias edge. An absent or non-differentiable input is an
// empty edge. It saves what the *_bwd op needs: the normalised input (x; h for the fused ops,
// saved as an output of the node), the statistics, the present parameters, normalized_shape.
template <bool kRms, bool kAdd>
struct NormBackward final : public torch::autograd::Node {
  using SavedVariable = torch::autograd::SavedVariable;

  std::string name() const override {
    if constexpr (kAdd) {
      return kRms ? "AddRmsNormBackward" : "AddLayerNormBackward";
    } else {
      return kRms ? "RmsNormBackward" : "LayerNormBackward";
    }
  }

  variable_list apply(variable_list&& grads) override {
    const at::Tensor& dy = grads[0];
    variable_list out(num_outputs());  // one gradient per next edge
    if (!kAdd && !dy.defined()) {
      return out;
    }
    std::unique_lock<std::mutex> lock(mutex_);  // the saved variables, under concurrent backwards
    const at::Tensor input = kAdd ? input_.unpack(getptr()) : input_.unpack();
    std::optional<at::Tensor> mean;
    if constexpr (!kRms) {
      mean = mean_.unpack();
    }
    const at::Tensor rstd = rstd_.unpack();
    const std::optional<at::Tensor> weight = has_weight_ ? std::optional<at::Tensor>(weight_.unpack()) : std::nullopt;
    const std::optional<at::Tensor> bias = has_bias_ ? std::optional<at::Tensor>(bias_.unpack()) : std::nullopt;
    lock.unlock();

    constexpr size_t kWeight = kAdd ? 2 : 1;  // the edges: x, [residual,] weight, [bias]
    at::Tensor dweight;
    at::Tensor dbias;
    if constexpr (kAdd) {
      AddNormGrads g = add_norm_grads(dy, grads[1], input, mean, rstd, normalized_shape_, weight, bias, x_dtype_);
      out[0] = std::move(g.dx);
      out[1] = std::move(g.dresidual);
      dweight = std::move(g.dweight);
      dbias = std::move(g.dbias);
    } else if constexpr (kRms) {
      std::tie(out[0], dweight) = call_bwd<RmsNormBwdOp>(dy, input, rstd, normalized_shape_, weight);
    } else {
      std::tie(out[0], dweight, dbias) =
          call_bwd<LayerNormBwdOp>(dy, input, *mean, rstd, normalized_shape_, weight, bias);
    }
    out[kWeight] = weight ? std::move(dweight) : at::Tensor();
    if constexpr (!kRms) {
      out[kWeight + 1] = bias ? std::move(dbias) : at::Tensor();
    }
    return out;
  }

  void release_variables() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    input_.reset_data();
    mean_.reset_data();
    rstd_.reset_data();
    weight_.reset_data();
    bias_.reset_data();
  }

  SavedVariable input_, mean_, rstd_, weight_, bias_;
  std::vector<int64_t> normalized_shape_;
  bool has_weight_ = false;
  bool has_bias_ = false;
  c10::ScalarType x_dtype_ = c10::ScalarType::Undefined;  // kAdd: the dtype of x's gradient
};

// torch holds autograd nodes by std::shared_ptr (torch 2.11) or by c10::intrusive_ptr (newer
// releases); an edge's pointer type tells which, and the node is made the way that release makes its
// own. deleteNode, torch 2.11's deleter (it frees long chains of nodes without deep recursion), is
// found through the node's base class when the branch is instantiated: newer releases have none.
using NodePtr = decltype(torch::autograd::Edge::function);

template <class T>
auto new_node() {
  if constexpr (std::is_same_v<NodePtr, std::shared_ptr<torch::autograd::Node>>) {
    return std::shared_ptr<T>(new T(), [](T* node) { deleteNode(node); });
  } else {
    return c10::make_intrusive<T>();
  }
}

// A node with its next edges and everything it saves but the normalised input.
template <bool kRms, bool kAdd>
auto make_node(torch::autograd::edge_list next_edges, const at::Tensor& mean, const at::Tensor& rstd,
               c10::IntArrayRef normalized_shape, const std::optional<at::Tensor>& weight,
               const std::optional<at::Tensor>& bias) {
  using torch::autograd::SavedVariable;
  auto node = new_node<NormBackward<kRms, kAdd>>();
  node->set_next_edges(std::move(next_edges));
  if constexpr (!kRms) {
    node->mean_ = SavedVariable(mean, /*is_output=*/false);
  }
  node->rstd_ = SavedVariable(rstd, /*is_output=*/false);
  node->has_weight_ = weight.has_value();
  if (weight) {
    node->weight_ = SavedVariable(*weight, /*is_output=*/false);
  }
  node->has_bias_ = bias.has_value();
  if (bias) {
    node->bias_ = SavedVariable(*bias, /*is_output=*/false);
  }
  node->normalized_shape_ = normalized_shape.vec();
  return node;
}

}  // namespace

// -----------------------------------------------------------------------------
// Autograd kernels
// -----------------------------------------------------------------------------

// The public ops: the statistics only when autograd will want them.
at::Tensor layer_norm(const at::Tensor& x, c10::IntArrayRef normalized_shape, const std::optional<at::Tensor>& weight,
                      const std::optional<at::Tensor>& bias, double eps) {
  if (!records(x, weight, bias)) {
    return call_below<LayerNormInferenceOp>(x, normalized_shape, weight, bias, eps);
  }
  auto [y, mean, rstd] = call_below<LayerNormFwdOp>(x, normalized_shape, weight, bias, eps);
  auto node = make_node<false, false>(torch::autograd::collect_next_edges(x, weight, bias), mean, rstd,
                                      normalized_shape, weight, bias);
  node->input_ = torch::autograd::SavedVariable(x, /*is_output=*/false);
  torch::autograd::set_history(y, node);
  return y;
}

at::Tensor rms_norm(const at::Tensor& x, c10::IntArrayRef normalized_shape, const std::optional<at::Tensor>& weight,
                    double eps) {
  if (!records(x, weight)) {
    return call_below<RmsNormInferenceOp>(x, normalized_shape, weight, eps);
  }
  auto [y, rstd] = call_below<RmsNormFwdOp>(x, normalized_shape, weight, eps);
  auto node = make_node<true, false>(torch::autograd::collect_next_edges(x, weight), at::Tensor(), rstd,
                                     normalized_shape, weight, std::nullopt);
  node->input_ = torch::autograd::SavedVariable(x, /*is_output=*/false);
  torch::autograd::set_history(y, node);
  return y;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_fwd(const at::Tensor& x, c10::IntArrayRef normalized_shape,
                                                              const std::optional<at::Tensor>& weight,
                                                              const std::optional<at::Tensor>& bias, double eps) {
  if (records(x, weight, bias)) {
    return from_list<std::tuple<at::Tensor, at::Tensor, at::Tensor>>(
        LayerNormFwdFunction::apply(x, normalized_shape, weight, bias, eps));
  }
  return call_below<LayerNormFwdOp>(x, normalized_shape, weight, bias, eps);
}

std::tuple<at::Tensor, at::Tensor> rms_norm_fwd(const at::Tensor& x, c10::IntArrayRef normalized_shape,
                                                const std::optional<at::Tensor>& weight, double eps) {
  if (records(x, weight)) {
    return from_list<std::tuple<at::Tensor, at::Tensor>>(RmsNormFwdFunction::apply(x, normalized_shape, weight, eps));
  }
  return call_below<RmsNormFwdOp>(x, normalized_shape, weight, eps);
}

at::Tensor layer_norm_inference(const at::Tensor& x, c10::IntArrayRef normalized_shape,
                                const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
                                double eps) {
  return no_derivative<LayerNormInferenceOp>(x, normalized_shape, weight, bias, eps);
}

at::Tensor rms_norm_inference(const at::Tensor& x, c10::IntArrayRef normalized_shape,
                              const std::optional<at::Tensor>& weight, double eps) {
  return no_derivative<RmsNormInferenceOp>(x, normalized_shape, weight, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_bwd(const at::Tensor& dy, const at::Tensor& x,
                                                              const at::Tensor& mean, const at::Tensor& rstd,
                                                              c10::IntArrayRef normalized_shape,
                                                              const std::optional<at::Tensor>& weight,
                                                              const std::optional<at::Tensor>& bias) {
  return no_derivative<LayerNormBwdOp>(dy, x, mean, rstd, normalized_shape, weight, bias);
}

std::tuple<at::Tensor, at::Tensor> rms_norm_bwd(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                                                c10::IntArrayRef normalized_shape,
                                                const std::optional<at::Tensor>& weight) {
  return no_derivative<RmsNormBwdOp>(dy, x, rstd, normalized_shape, weight);
}

std::tuple<at::Tensor, at::Tensor> add_layer_norm(const at::Tensor& x, const at::Tensor& residual,
                                                  c10::IntArrayRef normalized_shape,
                                                  const std::optional<at::Tensor>& weight,
                                                  const std::optional<at::Tensor>& bias, double eps,
                                                  std::optional<c10::ScalarType> out_dtype) {
  if (!records(x, residual, weight, bias)) {
    return call_below<AddLayerNormOp>(x, residual, normalized_shape, weight, bias, eps, out_dtype);
  }
  auto [y, h, mean, rstd] = call_below<AddLayerNormFwdOp>(x, residual, normalized_shape, weight, bias, eps, out_dtype);
  auto node = make_node<false, true>(torch::autograd::collect_next_edges(x, residual, weight, bias), mean, rstd,
                                     normalized_shape, weight, bias);
  node->x_dtype_ = x.scalar_type();
  torch::autograd::set_history(y, node);
  torch::autograd::set_history(h, node);
  node->input_ = torch::autograd::SavedVariable(h, /*is_output=*/true);  // after h's history: no cycle
  return {y, h};
}

std::tuple<at::Tensor, at::Tensor> add_rms_norm(const at::Tensor& x, const at::Tensor& residual,
                                                c10::IntArrayRef normalized_shape,
                                                const std::optional<at::Tensor>& weight, double eps,
                                                std::optional<c10::ScalarType> out_dtype) {
  if (!records(x, residual, weight)) {
    return call_below<AddRmsNormOp>(x, residual, normalized_shape, weight, eps, out_dtype);
  }
  auto [y, h, rstd] = call_below<AddRmsNormFwdOp>(x, residual, normalized_shape, weight, eps, out_dtype);
  auto node = make_node<true, true>(torch::autograd::collect_next_edges(x, residual, weight), at::Tensor(), rstd,
                                    normalized_shape, weight, std::nullopt);
  node->x_dtype_ = x.scalar_type();
  torch::autograd::set_history(y, node);
  torch::autograd::set_history(h, node);
  node->input_ = torch::autograd::SavedVariable(h, /*is_output=*/true);
  return {y, h};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> add_layer_norm_fwd(
    const at::Tensor& x, const at::Tensor& residual, c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias, double eps,
    std::optional<c10::ScalarType> out_dtype) {
  if (records(x, residual, weight, bias)) {
    return from_list<std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>>(
        AddLayerNormFwdFunction::apply(x, residual, normalized_shape, weight, bias, eps, out_dtype));
  }
  return call_below<AddLayerNormFwdOp>(x, residual, normalized_shape, weight, bias, eps, out_dtype);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> add_rms_norm_fwd(const at::Tensor& x, const at::Tensor& residual,
                                                                c10::IntArrayRef normalized_shape,
                                                                const std::optional<at::Tensor>& weight, double eps,
                                                                std::optional<c10::ScalarType> out_dtype) {
  if (records(x, residual, weight)) {
    return from_list<std::tuple<at::Tensor, at::Tensor, at::Tensor>>(
        AddRmsNormFwdFunction::apply(x, residual, normalized_shape, weight, eps, out_dtype));
  }
  return call_below<AddRmsNormFwdOp>(x, residual, normalized_shape, weight, eps, out_dtype);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> add_norm_bwd(
    const at::Tensor& dy, const std::optional<at::Tensor>& dh, const at::Tensor& h,
    const std::optional<at::Tensor>& mean, const at::Tensor& rstd, c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias, c10::ScalarType x_dtype) {
  return no_derivative<AddNormBwdOp>(dy, dh, h, mean, rstd, normalized_shape, weight, bias, x_dtype);
}

}  // namespace reference_ops::autograd
