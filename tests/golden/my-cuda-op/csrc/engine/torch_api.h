// The part of torch the glue (op.h, op.cpp) and the engines use, under one set of names whichever
// ABI the project builds against:
// the LibTorch stable ABI (torch/csrc/stable, torch/headeronly), which reaches libtorch only through
// its C shim, so one build loads into every torch from the floor setup.py targets
// (TORCH_TARGET_VERSION) on. Schemas and scalars, which that ABI does not describe, are the small
// types below, filled from the schemas my_cuda_op/_registration.py declares.
#pragma once

#include <torch/csrc/stable/accelerator.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/macros.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/Dispatch_v2.h>
#include <torch/headeronly/core/ScalarType.h>
#include <torch/headeronly/macros/Macros.h>

#include <cstdint>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>
#ifdef __CUDACC__
#include <cuda_runtime.h>
#endif

namespace cuop_my_cuda_op {

using Tensor = torch::stable::Tensor;
using ScalarType = torch::headeronly::ScalarType;

// The type a kernel computes in: float for float16, bfloat16 and float32, double for float64 (what
// at::opmath_type gives these dtypes).
template <typename scalar_t>
using opmath_t = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;

// One scalar argument of a call, as the schema types it (float, int or bool).
class Scalar {
 public:
  explicit Scalar(double value) : value_(value) {}
  explicit Scalar(int64_t value) : value_(double(value)), integer_(value), is_integer_(true) {}
  template <typename T>
  T to() const {
    return is_integer_ ? T(integer_) : T(value_);
  }

 private:
  double value_ = 0;
  int64_t integer_ = 0;
  bool is_integer_ = false;
};

// An argument or a return of a schema: its name and whether it is a tensor ("Tensor x") or a
// scalar of a type ("float scale").
struct Argument {
  std::string type;
  std::string argument_name;
  const std::string& name() const { return argument_name; }
};
inline bool is_tensor(const Argument& argument) { return argument.type == "Tensor"; }

// A schema as torch.library writes it, "ns::name(Tensor x, float scale=1.0) -> (Tensor y)": what the
// checks (op.cpp) read of c10::FunctionSchema.
class Schema {
 public:
  Schema() = default;
  explicit Schema(const std::string& text);
  const std::string& name() const { return name_; }
  const std::vector<Argument>& arguments() const { return arguments_; }
  const std::vector<Argument>& returns() const { return returns_; }

 private:
  std::string name_;
  std::vector<Argument> arguments_;
  std::vector<Argument> returns_;
};

namespace detail {

inline void put(std::ostream& out, const torch::stable::Device& device) {
  switch (device.type()) {
    case torch::headeronly::DeviceType::CPU:
      out << "cpu";
      return;
    case torch::headeronly::DeviceType::CUDA:
      out << "cuda:" << int(device.index());
      return;
    case torch::headeronly::DeviceType::Meta:
      out << "meta";
      return;
    default:
      out << "a device of type " << int(device.type());
  }
}
inline void put(std::ostream& out, torch::headeronly::IntHeaderOnlyArrayRef sizes) {
  out << "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    out << (i ? ", " : "") << sizes[i];
  }
  out << "]";
}
template <typename T>
void put(std::ostream& out, const T& value) {
  out << value;
}

template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
  std::ostringstream message;
  (put(message, args), ...);
  throw std::runtime_error(message.str());
}

}  // namespace detail

// TORCH_CHECK of the stable ABI: the message alone (torch shows it as a RuntimeError). For code in
// this namespace (detail is its own).
#define OP_CHECK(cond, ...)      \
  do {                           \
    if (C10_UNLIKELY(!(cond))) { \
      detail::fail(__VA_ARGS__); \
    }                            \
  } while (0)
#define OP_DISPATCH_V2 THO_DISPATCH_V2

using IntArrayRef = torch::headeronly::IntHeaderOnlyArrayRef;

inline Tensor make_contiguous(const Tensor& t) { return torch::stable::contiguous(t); }
inline Tensor new_contiguous_like(const Tensor& t) { return torch::stable::empty_like(t); }
// A new contiguous tensor of these sizes, with t's dtype and device.
inline Tensor new_contiguous(const Tensor& t, IntArrayRef sizes) { return torch::stable::new_empty(t, sizes); }

// Makes the tensor's GPU current for a scope (nothing for a CPU tensor).
class DeviceGuard {
 public:
  explicit DeviceGuard(const Tensor& t) {
    if (t.is_cuda()) {
      guard_.emplace(t.get_device_index());
    }
  }

 private:
  std::optional<torch::stable::accelerator::DeviceGuard> guard_;
};

template <typename F>
void parallel_for(int64_t begin, int64_t end, int64_t grain_size, const F& f) {
  torch::stable::parallel_for(begin, end, grain_size, f);
}
#ifdef __CUDACC__

#define OP_CUDA_CHECK STD_CUDA_CHECK
#define OP_CUDA_KERNEL_LAUNCH_CHECK STD_CUDA_KERNEL_LAUNCH_CHECK

// The stream torch runs work on for the current GPU.
inline cudaStream_t current_stream() {
  void* stream = nullptr;
  TORCH_ERROR_CODE_CHECK(
      aoti_torch_get_current_cuda_stream(torch::stable::accelerator::getCurrentDeviceIndex(), &stream));
  return static_cast<cudaStream_t>(stream);
}
#endif

}  // namespace cuop_my_cuda_op
