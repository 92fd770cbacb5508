// The ops' checked entry points: argument checks, contiguous inputs, output allocation, and the
// call of the implementation for x's device (cpu:: in norm_cpu.cpp, cuda:: in norm_fwd.cu,
// norm_bwd.cu and add_norm.cu). _registration.cpp registers them as the ops.
#include "norm.h"

#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/EmptyTensor.h>
#include <ATen/ops/add.h>
#include <c10/core/DeviceGuard.h>

#include <vector>

#include "norm_cpu.h"
#include "norm_plan.h"

namespace reference_ops {

namespace {

// -----------------------------------------------------------------------------
// Argument checks
// -----------------------------------------------------------------------------

bool is_supported_dtype(c10::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kBFloat16 || t == at::kDouble;
}

void check_param(const char* op, const char* name, const at::Tensor& x, const at::Tensor& p,
                 c10::IntArrayRef normalized_shape) {
  TORCH_CHECK(p.device() == x.device(), op, ": ", name, " is on ", p.device(), " but x is on ", x.device(), "; move ",
              name, " to x's device (e.g. module.to(x.device))");
  TORCH_CHECK(p.sizes() == normalized_shape, op, ": ", name, " must have shape normalized_shape = ", normalized_shape,
              ", got ", p.sizes());
  const bool same = p.scalar_type() == x.scalar_type();
  const bool mixed =
      p.scalar_type() == at::kFloat && (x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16);
  TORCH_CHECK(same || mixed, op, ": ", name, " has dtype ", p.scalar_type(), " but x has dtype ", x.scalar_type(), "; ",
              name, " must have x's dtype, or float32 when x is float16/bfloat16 (convert with .to(x.dtype))");
}

// dtype of mean / rstd: float32 for float32/float16/bfloat16 input, float64 for float64.
c10::ScalarType stat_dtype(c10::ScalarType x_dtype) { return x_dtype == at::kDouble ? at::kDouble : at::kFloat; }

// Shape of mean / rstd: the leading (non-normalised) dimensions of x.
std::vector<int64_t> stat_shape(const at::Tensor& x, c10::IntArrayRef normalized_shape) {
  const auto sizes = x.sizes();
  return std::vector<int64_t>(sizes.begin(), sizes.end() - static_cast<int64_t>(normalized_shape.size()));
}

// Validates x / weight / bias against normalized_shape and returns (rows, cols). `op` names the
// public function in error messages.
NormShape check_norm_args(const char* op, const at::Tensor& x, c10::IntArrayRef normalized_shape,
                          const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias) {
  TORCH_CHECK(is_supported_dtype(x.scalar_type()), op, ": x must be float32, float16, bfloat16 or float64, got ",
              x.scalar_type(), "; convert it first (e.g. x.float())");
  TORCH_CHECK(!normalized_shape.empty(), op,
              ": normalized_shape must name at least one trailing dimension of x, got []");
  const int64_t nd = static_cast<int64_t>(normalized_shape.size());
  TORCH_CHECK(x.dim() >= nd && x.sizes().slice(x.dim() - nd) == normalized_shape, op, ": normalized_shape ",
              normalized_shape, " must equal the trailing dimensions of x, got x of shape ", x.sizes(),
              "; pass normalized_shape = x.shape[-k:] for the k dimensions to normalise over");
  int64_t cols = 1;
  for (const int64_t s : normalized_shape) {
    cols *= s;
  }
  TORCH_CHECK(cols > 0, op, ": normalized_shape ", normalized_shape, " has no elements; every dimension must be >= 1");
  if (weight.has_value()) {
    check_param(op, "weight", x, *weight, normalized_shape);
  }
  if (bias.has_value()) {
    check_param(op, "bias", x, *bias, normalized_shape);
    TORCH_CHECK(!weight.has_value() || weight->scalar_type() == bias->scalar_type(), op, ": weight (",
                weight->scalar_type(), ") and bias (", bias->scalar_type(), ") must have the same dtype");
  }
  return {x.numel() / cols, cols};
}

// Validates the saved statistics and the incoming gradient of a backward op (dy in x's dtype, or in
// `dy_dtype` where the forward wrote y in another one).
NormShape check_norm_bwd_args(const char* op, const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                              c10::IntArrayRef normalized_shape, const std::optional<at::Tensor>& weight,
                              const std::optional<at::Tensor>& bias,
                              c10::ScalarType dy_dtype = c10::ScalarType::Undefined) {
  const NormShape shape = check_norm_args(op, x, normalized_shape, weight, bias);
  TORCH_CHECK(dy.sizes() == x.sizes() && (dy.scalar_type() == x.scalar_type() || dy.scalar_type() == dy_dtype) &&
                  dy.device() == x.device(),
              op, ": the gradient must match x in shape, dtype and device; got ", dy.sizes(), " ", dy.scalar_type(),
              " on ", dy.device(), " for x ", x.sizes(), " ", x.scalar_type(), " on ", x.device());
  TORCH_CHECK(
      rstd.device() == x.device() && rstd.scalar_type() == stat_dtype(x.scalar_type()) && rstd.numel() == shape.rows,
      op, ": rstd must be the statistics returned by the forward op (", shape.rows, " values of dtype ",
      stat_dtype(x.scalar_type()), " on ", x.device(), "), got ", rstd.sizes(), " ", rstd.scalar_type(), " on ",
      rstd.device());
  return shape;
}

// -----------------------------------------------------------------------------
// Allocation and the implementation of x's device
// -----------------------------------------------------------------------------

// A new contiguous tensor, straight from the device's allocator. The entry points run below the
// dispatcher (they are the ops' CPU and CUDA kernels); at::empty would go through it again, a few
// microseconds of host time an output, where inductor's generated code allocates its own buffers
// this way too.
at::Tensor new_tensor(c10::IntArrayRef sizes, const at::TensorOptions& options) {
  if (options.device().is_cuda()) {
    return at::detail::empty_cuda(sizes, options);
  }
  return at::detail::empty_cpu(sizes, options);
}

at::Tensor new_tensor_like(const at::Tensor& t) { return new_tensor(t.sizes(), t.options()); }

at::Tensor contiguous_or_undefined(const std::optional<at::Tensor>& t) {
  return t.has_value() ? t->contiguous() : at::Tensor();
}

at::Tensor grad_like(const std::optional<at::Tensor>& param) {
  return param.has_value() ? new_tensor_like(*param) : at::Tensor();
}

// The schema returns an empty tensor in place of the gradient of an absent parameter.
at::Tensor defined_or_empty(const at::Tensor& t, const at::Tensor& like) {
  return t.defined() ? t : new_tensor({0}, like.options());
}

// The implementation of x's device (every tensor was checked to be on it).
void run_norm_fwd(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, at::Tensor& y,
                  at::Tensor& mean, at::Tensor& rstd, NormShape shape, double eps, bool rms) {
  if (x.is_cuda()) {
    cuda::norm_fwd(x, weight, bias, y, mean, rstd, shape, eps, rms);
  } else {
    cpu::norm_fwd(x, weight, bias, y, mean, rstd, shape, eps, rms);
  }
}

void run_norm_bwd(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                  const at::Tensor& weight, at::Tensor& dx, at::Tensor& dweight, at::Tensor& dbias, NormShape shape) {
  if (x.is_cuda()) {
    cuda::norm_bwd(dy, x, mean, rstd, weight, dx, dweight, dbias, shape);
  } else {
    cpu::norm_bwd(dy, x, mean, rstd, weight, dx, dweight, dbias, shape);
  }
}

// What a forward entry point asks of norm_fwd / add_norm_fwd: the op (named in its errors), the
// norm, and whether the statistics a backward needs are kept (rstd, and LayerNorm's mean).
struct FwdRequest {
  const char* op;
  Norm norm;
  bool stats;
  bool rms() const { return norm == Norm::kRms; }
};

constexpr FwdRequest kLayerNormFwd{"layer_norm", Norm::kLayerNorm, /*stats=*/true};
constexpr FwdRequest kLayerNormInference{"layer_norm", Norm::kLayerNorm, /*stats=*/false};
constexpr FwdRequest kRmsNormFwd{"rms_norm", Norm::kRms, /*stats=*/true};
constexpr FwdRequest kRmsNormInference{"rms_norm", Norm::kRms, /*stats=*/false};
constexpr FwdRequest kAddLayerNormFwd{"add_layer_norm", Norm::kLayerNorm, /*stats=*/true};
constexpr FwdRequest kAddLayerNormInference{"add_layer_norm", Norm::kLayerNorm, /*stats=*/false};
constexpr FwdRequest kAddRmsNormFwd{"add_rms_norm", Norm::kRms, /*stats=*/true};
constexpr FwdRequest kAddRmsNormInference{"add_rms_norm", Norm::kRms, /*stats=*/false};

struct FwdOutputs {
  at::Tensor y;
  at::Tensor mean;
  at::Tensor rstd;
};

// Checks, allocates y (and, with req.stats, rstd and LayerNorm's mean) and runs the implementation.
FwdOutputs norm_fwd(const FwdRequest& req, const at::Tensor& x, c10::IntArrayRef normalized_shape,
                    const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias, double eps) {
  const NormShape shape = check_norm_args(req.op, x, normalized_shape, weight, bias);
  const c10::DeviceGuard guard(x.device());  // checked above: every tensor is on x's device
  const at::Tensor xc = x.contiguous();
  FwdOutputs out{new_tensor_like(xc), at::Tensor(), at::Tensor()};
  if (req.stats) {
    const auto stat_opts = x.options().dtype(stat_dtype(x.scalar_type()));
    out.rstd = new_tensor(stat_shape(x, normalized_shape), stat_opts);
    if (!req.rms()) {
      out.mean = new_tensor(stat_shape(x, normalized_shape), stat_opts);
    }
  }
  run_norm_fwd(xc, contiguous_or_undefined(weight), contiguous_or_undefined(bias), out.y, out.mean, out.rstd, shape,
               eps, req.rms());
  return out;
}

// The fused residual ops: x and residual of one shape and device; h (and y) have the residual's
// dtype, which is x's, or float32 beside a float16 / bfloat16 x (a float32 residual stream). The
// parameters are checked against the residual (they multiply h).
NormShape check_add_norm_args(const char* op, const at::Tensor& x, const at::Tensor& residual,
                              c10::IntArrayRef normalized_shape, const std::optional<at::Tensor>& weight,
                              const std::optional<at::Tensor>& bias) {
  TORCH_CHECK(residual.device() == x.device(), op, ": residual is on ", residual.device(), " but x is on ", x.device(),
              "; move both to one device");
  TORCH_CHECK(residual.sizes() == x.sizes(), op, ": residual must have x's shape ", x.sizes(), ", got ",
              residual.sizes(), " (broadcasting is not supported: expand and make it contiguous first)");
  const c10::ScalarType xt = x.scalar_type();
  const c10::ScalarType rt = residual.scalar_type();
  const bool stream32 = rt == at::kFloat && (xt == at::kHalf || xt == at::kBFloat16);
  TORCH_CHECK(rt == xt || stream32, op, ": residual has dtype ", rt, " but x has dtype ", xt,
              "; residual must have x's dtype, or float32 when x is float16/bfloat16 (a float32 residual stream)");
  return check_norm_args(op, residual, normalized_shape, weight, bias);
}

// y's dtype: the residual's (out_dtype absent), or x's beside a float32 residual stream (the dtype of
// the sublayer that reads y, so that y needs no cast there).
c10::ScalarType add_norm_out_dtype(const char* op, const at::Tensor& x, const at::Tensor& residual,
                                   std::optional<c10::ScalarType> out_dtype) {
  const c10::ScalarType rt = residual.scalar_type();
  if (!out_dtype.has_value()) {
    return rt;
  }
  TORCH_CHECK(*out_dtype == rt || *out_dtype == x.scalar_type(), op, ": out_dtype ", *out_dtype,
              " is neither the residual's dtype (", rt, ") nor x's (", x.scalar_type(),
              "); y comes in the residual stream's dtype, or in x's beside a float32 stream");
  return *out_dtype;
}

struct AddNormOutputs {
  at::Tensor y;
  at::Tensor h;
  at::Tensor mean;
  at::Tensor rstd;
};

// Checks, allocates h and y (and, with req.stats, rstd and LayerNorm's mean), and runs the fused
// kernel, or, for a call it does not take (and on the CPU), the add and then the norm.
AddNormOutputs add_norm_fwd(const FwdRequest& req, const at::Tensor& x, const at::Tensor& residual,
                            c10::IntArrayRef normalized_shape, const std::optional<at::Tensor>& weight,
                            const std::optional<at::Tensor>& bias, double eps,
                            std::optional<c10::ScalarType> out_dtype) {
  const NormShape shape = check_add_norm_args(req.op, x, residual, normalized_shape, weight, bias);
  const c10::ScalarType y_dtype = add_norm_out_dtype(req.op, x, residual, out_dtype);
  const c10::DeviceGuard guard(x.device());  // checked above: every tensor is on x's device
  const at::Tensor xc = x.contiguous();
  const at::Tensor rc = residual.contiguous();
  AddNormOutputs out{new_tensor(rc.sizes(), rc.options().dtype(y_dtype)), new_tensor_like(rc), at::Tensor(),
                     at::Tensor()};
  if (req.stats) {
    const auto stat_opts = rc.options().dtype(stat_dtype(rc.scalar_type()));
    out.rstd = new_tensor(stat_shape(rc, normalized_shape), stat_opts);
    if (!req.rms()) {
      out.mean = new_tensor(stat_shape(rc, normalized_shape), stat_opts);
    }
  }
  const at::Tensor w = contiguous_or_undefined(weight);
  const at::Tensor b = contiguous_or_undefined(bias);
  if (x.is_cuda() && cuda::add_norm_fwd(xc, rc, w, b, out.h, out.y, out.mean, out.rstd, shape, eps, req.rms())) {
    return out;
  }
  at::add_out(out.h, rc, xc);
  if (y_dtype == rc.scalar_type()) {
    run_norm_fwd(out.h, w, b, out.y, out.mean, out.rstd, shape, eps, req.rms());
  } else {
    at::Tensor y = new_tensor_like(out.h);
    run_norm_fwd(out.h, w, b, y, out.mean, out.rstd, shape, eps, req.rms());
    out.y.copy_(y);
  }
  return out;
}
}  // namespace

// -----------------------------------------------------------------------------
// Entry points
// -----------------------------------------------------------------------------

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_fwd(const at::Tensor& x, c10::IntArrayRef normalized_shape,
                                                              const std::optional<at::Tensor>& weight,
                                                              const std::optional<at::Tensor>& bias, double eps) {
  FwdOutputs out = norm_fwd(kLayerNormFwd, x, normalized_shape, weight, bias, eps);
  return {out.y, out.mean, out.rstd};
}

std::tuple<at::Tensor, at::Tensor> rms_norm_fwd(const at::Tensor& x, c10::IntArrayRef normalized_shape,
                                                const std::optional<at::Tensor>& weight, double eps) {
  FwdOutputs out = norm_fwd(kRmsNormFwd, x, normalized_shape, weight, std::nullopt, eps);
  return {out.y, out.rstd};
}

// No gradient wanted: no statistics are allocated, and the kernels write none.
at::Tensor layer_norm_inference(const at::Tensor& x, c10::IntArrayRef normalized_shape,
                                const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
                                double eps) {
  return norm_fwd(kLayerNormInference, x, normalized_shape, weight, bias, eps).y;
}

at::Tensor rms_norm_inference(const at::Tensor& x, c10::IntArrayRef normalized_shape,
                              const std::optional<at::Tensor>& weight, double eps) {
  return norm_fwd(kRmsNormInference, x, normalized_shape, weight, std::nullopt, eps).y;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_bwd(const at::Tensor& dy, const at::Tensor& x,
                                                              const at::Tensor& mean, const at::Tensor& rstd,
                                                              c10::IntArrayRef normalized_shape,
                                                              const std::optional<at::Tensor>& weight,
                                                              const std::optional<at::Tensor>& bias) {
  const NormShape shape = check_norm_bwd_args("layer_norm_bwd", dy, x, rstd, normalized_shape, weight, bias);
  TORCH_CHECK(
      mean.sizes() == rstd.sizes() && mean.scalar_type() == rstd.scalar_type() && mean.device() == rstd.device(),
      "layer_norm_bwd: mean must match rstd in shape, dtype and device (pass the mean and rstd returned by "
      "layer_norm_fwd); got mean ",
      mean.sizes(), " ", mean.scalar_type(), " and rstd ", rstd.sizes(), " ", rstd.scalar_type());
  const c10::DeviceGuard guard(x.device());  // checked above: every tensor is on x's device
  const at::Tensor xc = x.contiguous();
  at::Tensor dx = new_tensor_like(xc);
  at::Tensor dweight = grad_like(weight);
  at::Tensor dbias = grad_like(bias);
  run_norm_bwd(dy.contiguous(), xc, mean.contiguous(), rstd.contiguous(), contiguous_or_undefined(weight), dx, dweight,
               dbias, shape);
  return {dx, defined_or_empty(dweight, x), defined_or_empty(dbias, x)};
}

std::tuple<at::Tensor, at::Tensor> rms_norm_bwd(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                                                c10::IntArrayRef normalized_shape,
                                                const std::optional<at::Tensor>& weight) {
  const NormShape shape = check_norm_bwd_args("rms_norm_bwd", dy, x, rstd, normalized_shape, weight, std::nullopt);
  const c10::DeviceGuard guard(x.device());  // checked above: every tensor is on x's device
  const at::Tensor xc = x.contiguous();
  at::Tensor dx = new_tensor_like(xc);
  at::Tensor dweight = grad_like(weight);
  at::Tensor dbias;
  run_norm_bwd(dy.contiguous(), xc, at::Tensor(), rstd.contiguous(), contiguous_or_undefined(weight), dx, dweight,
               dbias, shape);
  return {dx, defined_or_empty(dweight, x)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> add_layer_norm_fwd(
    const at::Tensor& x, const at::Tensor& residual, c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias, double eps,
    std::optional<c10::ScalarType> out_dtype) {
  AddNormOutputs out = add_norm_fwd(kAddLayerNormFwd, x, residual, normalized_shape, weight, bias, eps, out_dtype);
  return {out.y, out.h, out.mean, out.rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> add_rms_norm_fwd(const at::Tensor& x, const at::Tensor& residual,
                                                                c10::IntArrayRef normalized_shape,
                                                                const std::optional<at::Tensor>& weight, double eps,
                                                                std::optional<c10::ScalarType> out_dtype) {
  AddNormOutputs out =
      add_norm_fwd(kAddRmsNormFwd, x, residual, normalized_shape, weight, std::nullopt, eps, out_dtype);
  return {out.y, out.h, out.rstd};
}

std::tuple<at::Tensor, at::Tensor> add_layer_norm_inference(const at::Tensor& x, const at::Tensor& residual,
                                                            c10::IntArrayRef normalized_shape,
                                                            const std::optional<at::Tensor>& weight,
                                                            const std::optional<at::Tensor>& bias, double eps,
                                                            std::optional<c10::ScalarType> out_dtype) {
  AddNormOutputs out =
      add_norm_fwd(kAddLayerNormInference, x, residual, normalized_shape, weight, bias, eps, out_dtype);
  return {out.y, out.h};
}

std::tuple<at::Tensor, at::Tensor> add_rms_norm_inference(const at::Tensor& x, const at::Tensor& residual,
                                                          c10::IntArrayRef normalized_shape,
                                                          const std::optional<at::Tensor>& weight, double eps,
                                                          std::optional<c10::ScalarType> out_dtype) {
  AddNormOutputs out =
      add_norm_fwd(kAddRmsNormInference, x, residual, normalized_shape, weight, std::nullopt, eps, out_dtype);
  return {out.y, out.h};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> add_norm_bwd(
    const at::Tensor& dy, const std::optional<at::Tensor>& dh, const at::Tensor& h,
    const std::optional<at::Tensor>& mean, const at::Tensor& rstd, c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias, c10::ScalarType x_dtype) {
  const c10::ScalarType ht = h.scalar_type();
  TORCH_CHECK(x_dtype == ht || (ht == at::kFloat && (x_dtype == at::kHalf || x_dtype == at::kBFloat16)),
              "add_norm_bwd: x_dtype ", x_dtype, " does not go with h of dtype ", ht,
              "; pass the dtype of the x given to add_layer_norm / add_rms_norm");
  // dy has y's dtype: h's, or x's (out_dtype).
  const NormShape shape = check_norm_bwd_args("add_norm_bwd", dy, h, rstd, normalized_shape, weight, bias, x_dtype);
  TORCH_CHECK(!dh.has_value() || (dh->sizes() == h.sizes() && dh->scalar_type() == ht && dh->device() == h.device()),
              "add_norm_bwd: dh (the gradient of h) must match h in shape, dtype and device; got ", dh->sizes(), " ",
              dh->scalar_type(), " on ", dh->device(), " for h ", h.sizes(), " ", ht, " on ", h.device());
  TORCH_CHECK(!mean.has_value() || (mean->sizes() == rstd.sizes() && mean->scalar_type() == rstd.scalar_type() &&
                                    mean->device() == rstd.device()),
              "add_norm_bwd: mean must match rstd in shape, dtype and device (pass the mean and rstd returned by "
              "add_layer_norm_fwd)");
  const c10::DeviceGuard guard(h.device());  // checked above: every tensor is on h's device
  const at::Tensor hc = h.contiguous();
  const at::Tensor dyc = dy.contiguous();
  const at::Tensor dhc = contiguous_or_undefined(dh);
  const at::Tensor meanc = contiguous_or_undefined(mean);
  const at::Tensor rstdc = rstd.contiguous();
  const at::Tensor w = contiguous_or_undefined(weight);
  at::Tensor dsum = new_tensor_like(hc);
  at::Tensor dx = x_dtype != ht ? new_tensor(hc.sizes(), hc.options().dtype(x_dtype)) : at::Tensor();
  at::Tensor dweight = grad_like(weight);
  at::Tensor dbias = grad_like(bias);
  const bool rms = !meanc.defined();
  if (!(h.is_cuda() && cuda::add_norm_bwd(dyc, dhc, hc, meanc, rstdc, w, dsum, dx, dweight, dbias, shape, rms))) {
    run_norm_bwd(dyc.to(ht), hc, meanc, rstdc, w, dsum, dweight, dbias, shape);
    if (dhc.defined()) {
      dsum.add_(dhc);
    }
    if (dx.defined()) {
      dx.copy_(dsum);
    }
  }
  return {dsum, defined_or_empty(dx, h), defined_or_empty(dweight, h), defined_or_empty(dbias, h)};
}

}  // namespace reference_ops
