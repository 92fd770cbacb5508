// reference_ops: schema of the normalisation ops (declared once, here), the
// argument checks shared with CUDA, the CPU implementation, and the Python
// module that loads the library.
//
// CPU algorithms: per row, the exact two-pass mean / variance (mean = sum/N,
// var = sum((x-mean)^2)/N) in float (double for float64); the backward adds
// dweight / dbias partials of a fixed number of row chunks in chunk order, so
// results do not depend on the thread count.

#include <Python.h>

#include "norm.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>
#include <vector>

extern "C" {
// Importing reference_ops._C loads this library, which runs the TORCH_LIBRARY
// registrations below; the module itself is empty.
PyObject* PyInit__C(void) {
  static struct PyModuleDef module_def = {
      PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr,
  };
  return PyModule_Create(&module_def);
}
}

namespace reference_ops {

namespace {

bool is_supported_dtype(c10::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kBFloat16 || t == at::kDouble;
}

void check_param(
    const char* op, const char* name, const at::Tensor& x, const at::Tensor& p, c10::IntArrayRef normalized_shape) {
  TORCH_CHECK(
      p.device() == x.device(), op, ": ", name, " is on ", p.device(), " but x is on ", x.device(), "; move ", name,
      " to x's device (e.g. module.to(x.device))");
  TORCH_CHECK(
      p.sizes() == normalized_shape, op, ": ", name, " must have shape normalized_shape = ", normalized_shape, ", got ",
      p.sizes());
  const bool same = p.scalar_type() == x.scalar_type();
  const bool mixed =
      p.scalar_type() == at::kFloat && (x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16);
  TORCH_CHECK(
      same || mixed, op, ": ", name, " has dtype ", p.scalar_type(), " but x has dtype ", x.scalar_type(), "; ", name,
      " must have x's dtype, or float32 when x is float16/bfloat16 (convert with .to(x.dtype))");
}

} // namespace

c10::ScalarType stat_dtype(c10::ScalarType x_dtype) {
  return x_dtype == at::kDouble ? at::kDouble : at::kFloat;
}

std::vector<int64_t> stat_shape(const at::Tensor& x, c10::IntArrayRef normalized_shape) {
  const auto sizes = x.sizes();
  return std::vector<int64_t>(sizes.begin(), sizes.end() - static_cast<int64_t>(normalized_shape.size()));
}

NormShape check_norm_args(
    const char* op,
    const at::Tensor& x,
    c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias) {
  TORCH_CHECK(
      is_supported_dtype(x.scalar_type()), op, ": x must be float32, float16, bfloat16 or float64, got ",
      x.scalar_type(), "; convert it first (e.g. x.float())");
  TORCH_CHECK(
      !normalized_shape.empty(), op, ": normalized_shape must name at least one trailing dimension of x, got []");
  const int64_t nd = static_cast<int64_t>(normalized_shape.size());
  TORCH_CHECK(
      x.dim() >= nd && x.sizes().slice(x.dim() - nd) == normalized_shape, op, ": normalized_shape ", normalized_shape,
      " must equal the trailing dimensions of x, got x of shape ", x.sizes(),
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
    TORCH_CHECK(
        !weight.has_value() || weight->scalar_type() == bias->scalar_type(), op, ": weight (", weight->scalar_type(),
        ") and bias (", bias->scalar_type(), ") must have the same dtype");
  }
  return {x.numel() / cols, cols};
}

NormShape check_norm_bwd_args(
    const char* op,
    const at::Tensor& dy,
    const at::Tensor& x,
    const at::Tensor& rstd,
    c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias) {
  const NormShape shape = check_norm_args(op, x, normalized_shape, weight, bias);
  TORCH_CHECK(
      dy.sizes() == x.sizes() && dy.scalar_type() == x.scalar_type() && dy.device() == x.device(), op,
      ": the gradient must match x in shape, dtype and device; got ", dy.sizes(), " ", dy.scalar_type(), " on ",
      dy.device(), " for x ", x.sizes(), " ", x.scalar_type(), " on ", x.device());
  TORCH_CHECK(
      rstd.device() == x.device() && rstd.scalar_type() == stat_dtype(x.scalar_type()) && rstd.numel() == shape.rows,
      op, ": rstd must be the statistics returned by the forward op (", shape.rows, " values of dtype ",
      stat_dtype(x.scalar_type()), " on ", x.device(), "), got ", rstd.sizes(), " ", rstd.scalar_type(), " on ",
      rstd.device());
  return shape;
}

// -----------------------------------------------------------------------------
// Device-independent entry points
// -----------------------------------------------------------------------------

namespace {

at::Tensor contiguous_or_undefined(const std::optional<at::Tensor>& t) {
  return t.has_value() ? t->contiguous() : at::Tensor();
}

at::Tensor grad_like(const std::optional<at::Tensor>& param) {
  return param.has_value() ? at::empty_like(*param, at::MemoryFormat::Contiguous) : at::Tensor();
}

// The schema returns an empty tensor in place of the gradient of an absent parameter.
at::Tensor defined_or_empty(const at::Tensor& t, const at::Tensor& like) {
  return t.defined() ? t : at::empty({0}, like.options());
}

} // namespace

namespace {

struct FwdOutputs {
  at::Tensor y;
  at::Tensor mean;
  at::Tensor rstd;
};

// Checks, allocates y (and, with `stats`, rstd and LayerNorm's mean) and runs the backend.
FwdOutputs norm_fwd(
    const char* op,
    const at::Tensor& x,
    c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias,
    double eps,
    bool rms,
    bool stats,
    NormFwdBackend backend) {
  const NormShape shape = check_norm_args(op, x, normalized_shape, weight, bias);
  const c10::DeviceGuard guard(x.device()); // checked above: every tensor is on x's device
  const at::Tensor xc = x.contiguous();
  FwdOutputs out{at::empty_like(xc), at::Tensor(), at::Tensor()};
  if (stats) {
    const auto stat_opts = x.options().dtype(stat_dtype(x.scalar_type()));
    out.rstd = at::empty(stat_shape(x, normalized_shape), stat_opts);
    if (!rms) {
      out.mean = at::empty(stat_shape(x, normalized_shape), stat_opts);
    }
  }
  backend(
      xc, contiguous_or_undefined(weight), contiguous_or_undefined(bias), out.y, out.mean, out.rstd, shape, eps, rms);
  return out;
}

} // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_fwd(
    const at::Tensor& x,
    c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias,
    double eps,
    NormFwdBackend backend,
    bool stats) {
  FwdOutputs out = norm_fwd("layer_norm", x, normalized_shape, weight, bias, eps, false, stats, backend);
  return {out.y, out.mean, out.rstd};
}

std::tuple<at::Tensor, at::Tensor> rms_norm_fwd(
    const at::Tensor& x,
    c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight,
    double eps,
    NormFwdBackend backend,
    bool stats) {
  FwdOutputs out = norm_fwd("rms_norm", x, normalized_shape, weight, std::nullopt, eps, true, stats, backend);
  return {out.y, out.rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_bwd(
    const at::Tensor& dy,
    const at::Tensor& x,
    const at::Tensor& mean,
    const at::Tensor& rstd,
    c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias,
    NormBwdBackend backend) {
  const NormShape shape = check_norm_bwd_args("layer_norm_bwd", dy, x, rstd, normalized_shape, weight, bias);
  TORCH_CHECK(
      mean.sizes() == rstd.sizes() && mean.scalar_type() == rstd.scalar_type() && mean.device() == rstd.device(),
      "layer_norm_bwd: mean must match rstd in shape, dtype and device (pass the mean and rstd returned by "
      "layer_norm_fwd); got mean ",
      mean.sizes(), " ", mean.scalar_type(), " and rstd ", rstd.sizes(), " ", rstd.scalar_type());
  const c10::DeviceGuard guard(x.device()); // checked above: every tensor is on x's device
  const at::Tensor xc = x.contiguous();
  at::Tensor dx = at::empty_like(xc);
  at::Tensor dweight = grad_like(weight);
  at::Tensor dbias = grad_like(bias);
  backend(
      dy.contiguous(), xc, mean.contiguous(), rstd.contiguous(), contiguous_or_undefined(weight), dx, dweight, dbias,
      shape);
  return {dx, defined_or_empty(dweight, x), defined_or_empty(dbias, x)};
}

std::tuple<at::Tensor, at::Tensor> rms_norm_bwd(
    const at::Tensor& dy,
    const at::Tensor& x,
    const at::Tensor& rstd,
    c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight,
    NormBwdBackend backend) {
  const NormShape shape = check_norm_bwd_args("rms_norm_bwd", dy, x, rstd, normalized_shape, weight, std::nullopt);
  const c10::DeviceGuard guard(x.device()); // checked above: every tensor is on x's device
  const at::Tensor xc = x.contiguous();
  at::Tensor dx = at::empty_like(xc);
  at::Tensor dweight = grad_like(weight);
  at::Tensor dbias;
  backend(
      dy.contiguous(), xc, at::Tensor(), rstd.contiguous(), contiguous_or_undefined(weight), dx, dweight, dbias, shape);
  return {dx, defined_or_empty(dweight, x)};
}

namespace cpu {
namespace {

// Rows per parallel task: about 32K elements of work each.
constexpr int64_t kGrainElems = 32768;

// Elements summed sequentially before adding into the row total (two-level
// summation keeps float rounding error near (kSumBlock + N / kSumBlock) * eps).
constexpr int64_t kSumBlock = 256;

// Sums f(c) over c in [0, n) in blocks of kSumBlock.
template <typename acc_t, typename F>
acc_t blocked_sum(int64_t n, const F& f) {
  acc_t total = acc_t(0);
  for (int64_t begin = 0; begin < n; begin += kSumBlock) {
    const int64_t end = std::min(n, begin + kSumBlock);
    acc_t block = acc_t(0);
    for (int64_t c = begin; c < end; ++c) {
      block += f(c);
    }
    total += block;
  }
  return total;
}

// Fixed number of row chunks whose dweight / dbias partials are added in order.
constexpr int64_t kBwdChunks = 32;

template <typename T, typename W>
void norm_fwd_typed(
    const at::Tensor& x,
    const at::Tensor& weight,
    const at::Tensor& bias,
    at::Tensor& y,
    at::Tensor& mean,
    at::Tensor& rstd,
    NormShape shape,
    double eps,
    bool rms) {
  using acc_t = at::opmath_type<T>;
  const T* xp = x.const_data_ptr<T>();
  const W* wp = weight.defined() ? weight.const_data_ptr<W>() : nullptr;
  const W* bp = bias.defined() ? bias.const_data_ptr<W>() : nullptr;
  T* yp = y.mutable_data_ptr<T>();
  acc_t* mp = mean.defined() ? mean.mutable_data_ptr<acc_t>() : nullptr;
  acc_t* rp = rstd.defined() ? rstd.mutable_data_ptr<acc_t>() : nullptr;
  const int64_t cols = shape.cols;
  const acc_t inv_cols = acc_t(1) / static_cast<acc_t>(cols);
  const int64_t grain = std::max<int64_t>(1, kGrainElems / cols);
  at::parallel_for(0, shape.rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const T* xr = xp + row * cols;
      const acc_t m =
          rms ? acc_t(0) : blocked_sum<acc_t>(cols, [&](int64_t c) { return static_cast<acc_t>(xr[c]); }) * inv_cols;
      const acc_t sq = blocked_sum<acc_t>(cols, [&](int64_t c) {
        const acc_t d = static_cast<acc_t>(xr[c]) - m;
        return d * d;
      });
      const acc_t r = acc_t(1) / std::sqrt(sq * inv_cols + static_cast<acc_t>(eps));
      if (mp != nullptr) {
        mp[row] = m;
      }
      if (rp != nullptr) {
        rp[row] = r;
      }
      T* yr = yp + row * cols;
      for (int64_t c = 0; c < cols; ++c) {
        acc_t v = (static_cast<acc_t>(xr[c]) - m) * r;
        if (wp != nullptr) {
          v *= static_cast<acc_t>(wp[c]);
        }
        if (bp != nullptr) {
          v += static_cast<acc_t>(bp[c]);
        }
        yr[c] = static_cast<T>(v);
      }
    }
  });
}

template <typename T, typename W>
void norm_bwd_typed(
    const at::Tensor& dy,
    const at::Tensor& x,
    const at::Tensor& mean,
    const at::Tensor& rstd,
    const at::Tensor& weight,
    at::Tensor& dx,
    at::Tensor& dweight,
    at::Tensor& dbias,
    NormShape shape) {
  using acc_t = at::opmath_type<T>;
  const T* dyp = dy.const_data_ptr<T>();
  const T* xp = x.const_data_ptr<T>();
  const acc_t* mp = mean.defined() ? mean.const_data_ptr<acc_t>() : nullptr;
  const acc_t* rp = rstd.const_data_ptr<acc_t>();
  const W* wp = weight.defined() ? weight.const_data_ptr<W>() : nullptr;
  T* dxp = dx.mutable_data_ptr<T>();
  const int64_t rows = shape.rows;
  const int64_t cols = shape.cols;
  const acc_t inv_cols = acc_t(1) / static_cast<acc_t>(cols);
  const int64_t chunks = std::max<int64_t>(1, std::min(rows, kBwdChunks));
  const int64_t rows_per_chunk = rows == 0 ? 0 : (rows + chunks - 1) / chunks;
  const bool want_dw = dweight.defined();
  const bool want_db = dbias.defined();
  std::vector<acc_t> dw_part(want_dw ? chunks * cols : 0, acc_t(0));
  std::vector<acc_t> db_part(want_db ? chunks * cols : 0, acc_t(0));
  at::parallel_for(0, chunks, 1, [&](int64_t chunk_begin, int64_t chunk_end) {
    for (int64_t chunk = chunk_begin; chunk < chunk_end; ++chunk) {
      const int64_t row_end = std::min(rows, (chunk + 1) * rows_per_chunk);
      for (int64_t row = chunk * rows_per_chunk; row < row_end; ++row) {
        const T* xr = xp + row * cols;
        const T* gr = dyp + row * cols;
        const acc_t m = mp != nullptr ? mp[row] : acc_t(0);
        const acc_t r = rp[row];
        const auto g_at = [&](int64_t c) {
          return static_cast<acc_t>(gr[c]) * (wp != nullptr ? static_cast<acc_t>(wp[c]) : acc_t(1));
        };
        const acc_t sum_g = blocked_sum<acc_t>(cols, g_at);
        const acc_t sum_gx =
            blocked_sum<acc_t>(cols, [&](int64_t c) { return g_at(c) * (static_cast<acc_t>(xr[c]) - m) * r; });
        const acc_t mean_g = mp != nullptr ? sum_g * inv_cols : acc_t(0);
        const acc_t mean_gx = sum_gx * inv_cols;
        T* dxr = dxp + row * cols;
        for (int64_t c = 0; c < cols; ++c) {
          const acc_t w = wp != nullptr ? static_cast<acc_t>(wp[c]) : acc_t(1);
          const acc_t d = static_cast<acc_t>(gr[c]);
          const acc_t xhat = (static_cast<acc_t>(xr[c]) - m) * r;
          dxr[c] = static_cast<T>(r * (d * w - mean_g - xhat * mean_gx));
          if (want_dw) {
            dw_part[chunk * cols + c] += d * xhat;
          }
          if (want_db) {
            db_part[chunk * cols + c] += d;
          }
        }
      }
    }
  });
  const auto reduce = [&](const std::vector<acc_t>& part, at::Tensor& out) {
    W* op = out.mutable_data_ptr<W>();
    for (int64_t c = 0; c < cols; ++c) {
      acc_t s = acc_t(0);
      for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        s += part[chunk * cols + c];
      }
      op[c] = static_cast<W>(s);
    }
  };
  if (want_dw) {
    reduce(dw_part, dweight);
  }
  if (want_db) {
    reduce(db_part, dbias);
  }
}

void norm_fwd_cpu(
    const at::Tensor& x,
    const at::Tensor& weight,
    const at::Tensor& bias,
    at::Tensor& y,
    at::Tensor& mean,
    at::Tensor& rstd,
    NormShape shape,
    double eps,
    bool rms) {
  dispatch_types(x.scalar_type(), has_float_params(x, weight, bias), [&](auto t, auto w) {
    norm_fwd_typed<decltype(t), decltype(w)>(x, weight, bias, y, mean, rstd, shape, eps, rms);
  });
}

void norm_bwd_cpu(
    const at::Tensor& dy,
    const at::Tensor& x,
    const at::Tensor& mean,
    const at::Tensor& rstd,
    const at::Tensor& weight,
    at::Tensor& dx,
    at::Tensor& dweight,
    at::Tensor& dbias,
    NormShape shape) {
  dispatch_types(x.scalar_type(), has_float_params(x, dweight, dbias), [&](auto t, auto w) {
    norm_bwd_typed<decltype(t), decltype(w)>(dy, x, mean, rstd, weight, dx, dweight, dbias, shape);
  });
}

} // namespace
} // namespace cpu

// Schema: mean / rstd have x's leading (non-normalised) shape, float32 (float64
// for float64 x). The backward ops return empty tensors in place of dweight /
// dbias when weight / bias is None.
TORCH_LIBRARY(reference_ops, m) {
  m.def(
      "layer_norm_fwd(Tensor x, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, "
      "Tensor)");
  m.def(
      "layer_norm_bwd(Tensor dy, Tensor x, Tensor mean, Tensor rstd, int[] normalized_shape, Tensor? weight, Tensor? "
      "bias) -> (Tensor, Tensor, Tensor)");
  m.def("rms_norm_fwd(Tensor x, int[] normalized_shape, Tensor? weight, float eps) -> (Tensor, Tensor)");
  m.def("layer_norm_inference(Tensor x, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> Tensor");
  m.def("rms_norm_inference(Tensor x, int[] normalized_shape, Tensor? weight, float eps) -> Tensor");
  m.def("rms_norm_bwd(Tensor dy, Tensor x, Tensor rstd, int[] normalized_shape, Tensor? weight) -> (Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(reference_ops, CPU, m) {
  m.impl(
      "layer_norm_fwd", [](const at::Tensor& x, c10::IntArrayRef shape, const std::optional<at::Tensor>& w,
                           const std::optional<at::Tensor>& b,
                           double eps) { return layer_norm_fwd(x, shape, w, b, eps, cpu::norm_fwd_cpu); });
  m.impl(
      "layer_norm_bwd",
      [](const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
         c10::IntArrayRef shape, const std::optional<at::Tensor>& w, const std::optional<at::Tensor>& b) {
        return layer_norm_bwd(dy, x, mean, rstd, shape, w, b, cpu::norm_bwd_cpu);
      });
  m.impl(
      "rms_norm_fwd", [](const at::Tensor& x, c10::IntArrayRef shape, const std::optional<at::Tensor>& w, double eps) {
        return rms_norm_fwd(x, shape, w, eps, cpu::norm_fwd_cpu);
      });
  m.impl(
      "layer_norm_inference", [](const at::Tensor& x, c10::IntArrayRef shape, const std::optional<at::Tensor>& w,
                                 const std::optional<at::Tensor>& b, double eps) {
        return std::get<0>(layer_norm_fwd(x, shape, w, b, eps, cpu::norm_fwd_cpu, /*stats=*/false));
      });
  m.impl(
      "rms_norm_inference",
      [](const at::Tensor& x, c10::IntArrayRef shape, const std::optional<at::Tensor>& w, double eps) {
        return std::get<0>(rms_norm_fwd(x, shape, w, eps, cpu::norm_fwd_cpu, /*stats=*/false));
      });
  m.impl(
      "rms_norm_bwd",
      [](const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd, c10::IntArrayRef shape,
         const std::optional<at::Tensor>& w) { return rms_norm_bwd(dy, x, rstd, shape, w, cpu::norm_bwd_cpu); });
}

} // namespace reference_ops
