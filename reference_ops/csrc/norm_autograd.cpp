// The ops' autograd kernels, registered to the Autograd key in _registration.cpp (as torchvision
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
// One mechanism records every call, the one torch's generated code uses for its own ops: an
// autograd node made here, its next edges the inputs', set as the outputs' history. No per-call
// AutogradContext, saved_data dictionary or output wrapping of torch::autograd::Function, which
// cost the public ops several microseconds more than torch's native norms. The differentiable
// ops (the public ops and their *_fwd, which return the statistics too, without a gradient) record
// NormBackward; the ops without a derivative (*_bwd, *_inference) torch's own Error node, which
// raises their message when a backward reaches it. Forward-mode AD is not implemented: every kernel
// refuses dual inputs (records()).
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/basic_ops.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>

#include <memory>
#include <mutex>
#include <string>
#include <type_traits>

#include "norm.h"

namespace reference_ops::autograd {

namespace {

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

// Forward-mode AD (a dual tensor's tangent) is not implemented: say so rather than return outputs
// without a tangent, as torch's generated code does for its ops without a forward derivative.
bool has_tangent(const at::Tensor& t) { return t.defined() && t._fw_grad(/*level=*/0).defined(); }
bool has_tangent(const std::optional<at::Tensor>& t) { return t.has_value() && has_tangent(*t); }
template <class T>
bool has_tangent(const T& /*not a tensor*/) {
  return false;
}

constexpr const char* kNoForwardAd =
    "reference_ops: forward-mode AD (the dual tensors of torch.autograd.forward_ad) is not supported by the "
    "reference_ops ops; use torch.nn.functional.layer_norm / rms_norm where a forward derivative is needed";

// What torch's own ops check: grad mode on and an input that requires grad. Every autograd kernel
// asks it first, so it also refuses inputs with a tangent.
template <class... Args>
bool records(const Args&... args) {
  TORCH_CHECK(!(has_tangent(args) || ...), kNoForwardAd);
  return at::GradMode::is_enabled() && (requires_grad(args) || ...);
}

std::optional<at::Tensor> defined_or_none(const at::Tensor& t) {
  return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt;
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
// The nodes
// -----------------------------------------------------------------------------

// The node a call of a differentiable op records, one class per norm: layer_norm / rms_norm and
// their *_fwd (y = norm(x); next edges x, weight, bias) and, with kAdd, add_layer_norm /
// add_rms_norm and their *_fwd ((y, h); next edges x, residual, weight, bias). The statistics the
// *_fwd ops also return have no gradient: when only they are used, none reaches the inputs. RMSNorm has no bias edge.
// An absent or non-differentiable input is an empty edge. It saves what the *_bwd op needs: the normalised input (x; h
// for the fused ops, saved as an output of the node), the statistics, the present parameters, normalized_shape.
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

template <class T, class... Args>
auto new_node(Args&&... args) {
  if constexpr (std::is_same_v<NodePtr, std::shared_ptr<torch::autograd::Node>>) {
    return std::shared_ptr<T>(new T(std::forward<Args>(args)...), [](T* node) { deleteNode(node); });
  } else {
    return c10::make_intrusive<T>(std::forward<Args>(args)...);
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

// Records a LayerNorm / RMSNorm call: y's history, x saved for the backward.
template <bool kRms>
void record_norm(const at::Tensor& y, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                 c10::IntArrayRef normalized_shape, const std::optional<at::Tensor>& weight,
                 const std::optional<at::Tensor>& bias) {
  auto node = make_node<kRms, false>(
      kRms ? torch::autograd::collect_next_edges(x, weight) : torch::autograd::collect_next_edges(x, weight, bias),
      mean, rstd, normalized_shape, weight, bias);
  node->input_ = torch::autograd::SavedVariable(x, /*is_output=*/false);
  torch::autograd::set_history(y, node);
}

// Records a fused residual call: the history of y and h, h saved for the backward.
template <bool kRms>
void record_add_norm(const at::Tensor& y, const at::Tensor& h, const at::Tensor& x, const at::Tensor& residual,
                     const at::Tensor& mean, const at::Tensor& rstd, c10::IntArrayRef normalized_shape,
                     const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias) {
  auto node = make_node<kRms, true>(kRms ? torch::autograd::collect_next_edges(x, residual, weight)
                                         : torch::autograd::collect_next_edges(x, residual, weight, bias),
                                    mean, rstd, normalized_shape, weight, bias);
  node->x_dtype_ = x.scalar_type();
  torch::autograd::set_history(y, node);
  torch::autograd::set_history(h, node);
  node->input_ = torch::autograd::SavedVariable(h, /*is_output=*/true);  // after h's history: no cycle
}

// -----------------------------------------------------------------------------
// Ops without a derivative: *_inference and *_bwd
// -----------------------------------------------------------------------------

// The next edges of an op's tensor arguments (an absent one: an empty edge), in order.
void add_edge(torch::autograd::edge_list& edges, const at::Tensor& t) {
  edges.push_back(t.defined() ? torch::autograd::impl::gradient_edge(t) : torch::autograd::Edge());
}
void add_edge(torch::autograd::edge_list& edges, const std::optional<at::Tensor>& t) {
  edges.push_back(t.has_value() && t->defined() ? torch::autograd::impl::gradient_edge(*t) : torch::autograd::Edge());
}
template <class T>
void add_edge(torch::autograd::edge_list& /*edges*/, const T& /*not a tensor*/) {}

// Runs the op below autograd; when recorded (grad mode on and an input that requires grad) its
// outputs' history is torch's Error node, so a backward that reaches them raises Op::kNoDerivative.
// Not recorded (the common case): no node at all.
template <class Op, class... Args>
auto no_derivative(const Args&... args) {
  const bool recorded = records(args...);
  auto out = call_below<Op>(args...);
  if (recorded) {
    torch::autograd::edge_list edges;
    (add_edge(edges, args), ...);
    auto node = new_node<torch::autograd::Error>(Op::kNoDerivative, std::move(edges));
    if constexpr (std::is_same_v<decltype(out), at::Tensor>) {
      torch::autograd::set_history(out, node);
    } else {
      std::apply([&](const auto&... t) { (torch::autograd::set_history(t, node), ...); }, out);
    }
  }
  return out;
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
  record_norm<false>(y, x, mean, rstd, normalized_shape, weight, bias);
  return y;
}

at::Tensor rms_norm(const at::Tensor& x, c10::IntArrayRef normalized_shape, const std::optional<at::Tensor>& weight,
                    double eps) {
  if (!records(x, weight)) {
    return call_below<RmsNormInferenceOp>(x, normalized_shape, weight, eps);
  }
  auto [y, rstd] = call_below<RmsNormFwdOp>(x, normalized_shape, weight, eps);
  record_norm<true>(y, x, at::Tensor(), rstd, normalized_shape, weight, std::nullopt);
  return y;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_fwd(const at::Tensor& x, c10::IntArrayRef normalized_shape,
                                                              const std::optional<at::Tensor>& weight,
                                                              const std::optional<at::Tensor>& bias, double eps) {
  const bool recorded = records(x, weight, bias);
  auto out = call_below<LayerNormFwdOp>(x, normalized_shape, weight, bias, eps);
  if (recorded) {
    record_norm<false>(std::get<0>(out), x, std::get<1>(out), std::get<2>(out), normalized_shape, weight, bias);
  }
  return out;
}

std::tuple<at::Tensor, at::Tensor> rms_norm_fwd(const at::Tensor& x, c10::IntArrayRef normalized_shape,
                                                const std::optional<at::Tensor>& weight, double eps) {
  const bool recorded = records(x, weight);
  auto out = call_below<RmsNormFwdOp>(x, normalized_shape, weight, eps);
  if (recorded) {
    record_norm<true>(std::get<0>(out), x, at::Tensor(), std::get<1>(out), normalized_shape, weight, std::nullopt);
  }
  return out;
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
  record_add_norm<false>(y, h, x, residual, mean, rstd, normalized_shape, weight, bias);
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
  record_add_norm<true>(y, h, x, residual, at::Tensor(), rstd, normalized_shape, weight, std::nullopt);
  return {y, h};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> add_layer_norm_fwd(
    const at::Tensor& x, const at::Tensor& residual, c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias, double eps,
    std::optional<c10::ScalarType> out_dtype) {
  const bool recorded = records(x, residual, weight, bias);
  auto out = call_below<AddLayerNormFwdOp>(x, residual, normalized_shape, weight, bias, eps, out_dtype);
  if (recorded) {
    record_add_norm<false>(std::get<0>(out), std::get<1>(out), x, residual, std::get<2>(out), std::get<3>(out),
                           normalized_shape, weight, bias);
  }
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> add_rms_norm_fwd(const at::Tensor& x, const at::Tensor& residual,
                                                                c10::IntArrayRef normalized_shape,
                                                                const std::optional<at::Tensor>& weight, double eps,
                                                                std::optional<c10::ScalarType> out_dtype) {
  const bool recorded = records(x, residual, weight);
  auto out = call_below<AddRmsNormFwdOp>(x, residual, normalized_shape, weight, eps, out_dtype);
  if (recorded) {
    record_add_norm<true>(std::get<0>(out), std::get<1>(out), x, residual, at::Tensor(), std::get<2>(out),
                          normalized_shape, weight, std::nullopt);
  }
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> add_norm_bwd(
    const at::Tensor& dy, const std::optional<at::Tensor>& dh, const at::Tensor& h,
    const std::optional<at::Tensor>& mean, const at::Tensor& rstd, c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias, c10::ScalarType x_dtype) {
  return no_derivative<AddNormBwdOp>(dy, dh, h, mean, rstd, normalized_shape, weight, bias, x_dtype);
}

}  // namespace reference_ops::autograd
