// The checks every op's call goes through, and how an op's kernels reach Python:
// boxed kernels registered with the dispatcher under the schemas my_cuda_op/_registration.py
// defines, and the forward's autograd kernel, in C++.
#include "op.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/library.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace cuop_my_cuda_op {
// The op's name in messages: the schema's without namespace and direction (scaled_gelu).
std::string op_name(const c10::FunctionSchema& schema) {
  std::string name = schema.name().substr(schema.name().find("::") + 2);
  for (const char* suffix : {"_fwd", "_bwd"}) {
    if (name.size() > 4 && name.compare(name.size() - 4, 4, suffix) == 0) {
      return name.substr(0, name.size() - 4);
    }
  }
  return name;
}

namespace {

// The dtypes this project was generated with; the kernels are dispatched for exactly these.
constexpr at::ScalarType kDtypes[] = {OP_DTYPES};
constexpr const char* kDtypeNames = "float32, float16, bfloat16, float64";
// Where the ops are declared, for messages.
constexpr const char* kDeclarations = "my_cuda_op/ops/";

bool is_tensor(const c10::Argument& argument) { return argument.type()->kind() == c10::TypeKind::TensorType; }

// The names of the schema's tensor arguments, in order.
std::vector<std::string> tensor_names(const c10::FunctionSchema& schema) {
  std::vector<std::string> names;
  for (const c10::Argument& argument : schema.arguments()) {
    if (is_tensor(argument)) {
      names.push_back(argument.name());
    }
  }
  return names;
}

}  // namespace

// A call's tensors are its schema's first arguments (the schemas put every tensor before the scalars),
// so the name of tensor i is argument i's. The messages are built only when a check fails: every call
// passes these checks, and none of them allocates on the way.
void check_call(const Call& call, int inputs, int outputs, int params) {
  const c10::FunctionSchema& schema = *call.schema;
  const auto& args = schema.arguments();
  const int tensors = int(std::count_if(args.begin(), args.end(), is_tensor));
  const int declared_outputs = int(schema.returns().size());
  const int declared_params = int(args.size()) - tensors;
  TORCH_CHECK(inputs == tensors && outputs == declared_outputs && params == declared_params, op_name(schema), ": ",
              schema.name(), " is declared with ", tensors, " tensors, ", declared_params, " scalars and ",
              declared_outputs, " outputs, but its functor takes ", inputs, " values, has ", params,
              " fields and returns ", outputs, " values; make the functor match its declaration in ", kDeclarations);
  const at::Tensor& first = call.tensors[0];
  for (size_t i = 0; i < call.tensors.size(); ++i) {
    const at::Tensor& t = call.tensors[i];
    const std::string& name = args[i].name();
    TORCH_CHECK(t.defined(), op_name(schema), ": ", name, " is an undefined tensor; pass a tensor");
    TORCH_CHECK(std::find(std::begin(kDtypes), std::end(kDtypes), t.scalar_type()) != std::end(kDtypes),
                op_name(schema), ": ", name, " has dtype ", t.scalar_type(), ", but this build has kernels for ",
                kDtypeNames, " only; convert it (e.g. .float()) or enable that dtype when generating the project");
    TORCH_CHECK(t.is_cuda() || t.is_cpu(), op_name(schema), ": ", name, " is on ", t.device(),
                "; move it to a CUDA device or the CPU");
    TORCH_CHECK(t.device() == first.device(), op_name(schema), ": ", name, " is on ", t.device(), " but ",
                args[0].name(), " is on ", first.device(), "; put both on one device");
    TORCH_CHECK(t.scalar_type() == first.scalar_type(), op_name(schema), ": ", name, " has dtype ", t.scalar_type(),
                " but ", args[0].name(), " has dtype ", first.scalar_type(), "; convert one to the other");
  }
}

void check_same_shapes(const Call& call) {
  const auto& args = call.schema->arguments();
  const at::Tensor& first = call.tensors[0];
  for (size_t i = 1; i < call.tensors.size(); ++i) {
    TORCH_CHECK(call.tensors[i].sizes() == first.sizes(), op_name(*call.schema), ": ", args[i].name(), " has shape ",
                call.tensors[i].sizes(), " but ", args[0].name(), " has shape ", first.sizes(),
                "; they must have the same shape");
  }
}

std::vector<at::Tensor> outputs_like_first(const Call& call, int count) {
  std::vector<at::Tensor> out;
  for (int i = 0; i < count; ++i) {
    out.push_back(at::empty_like(call.tensors[0], at::MemoryFormat::Contiguous));
  }
  return out;
}

bool backward_reads_inputs(const c10::FunctionSchema& forward, const c10::FunctionSchema& backward) {
  const std::vector<std::string> inputs = tensor_names(forward);
  for (const std::string& name : tensor_names(backward)) {
    if (std::find(inputs.begin(), inputs.end(), name) != inputs.end()) {
      return true;
    }
  }
  return false;
}

namespace {

using torch::autograd::variable_list;

// The op as the dispatcher holds it, looked up by name once the schemas are defined.
const c10::OperatorHandle& find_op(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, c10::OperatorHandle> found;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = found.find(name);
  if (it == found.end()) {
    it = found.emplace(name, c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), "")).first;
  }
  return it->second;
}

// A call's arguments, taken off the dispatcher's stack.
Call take_call(const c10::FunctionSchema& schema, torch::jit::Stack& stack) {
  Call call;
  call.schema = &schema;
  const size_t count = schema.arguments().size();
  for (size_t i = stack.size() - count; i < stack.size(); ++i) {
    c10::IValue& value = stack[i];
    if (value.isTensor()) {
      call.tensors.push_back(std::move(value).toTensor());
    } else {
      call.scalars.push_back(value.toScalar());
    }
  }
  torch::jit::drop(stack, schema.arguments().size());
  return call;
}

// One direction's kernel as the dispatcher calls it (boxed: the arguments on a stack), for any
// number of tensors and scalars. The forward's also says whether its backward reads its inputs.
class BoxedKernel final : public c10::OperatorKernel {
 public:
  BoxedKernel(Kernel kernel, bool forward) : kernel_(kernel), forward_(forward) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet /*keys*/, torch::jit::Stack* stack) {
    const c10::FunctionSchema& schema = op.schema();
    Call call = take_call(schema, *stack);
    if (forward_) {
      std::call_once(reread_known_, [&] {
        const std::string& name = schema.name();
        reread_ = backward_reads_inputs(schema, find_op(name.substr(0, name.size() - 4) + "_bwd").schema());
      });
      call.reread = reread_;
    }
    for (at::Tensor& t : kernel_(call)) {
      torch::jit::push(*stack, std::move(t));
    }
  }

 private:
  Kernel kernel_;
  bool forward_;
  std::once_flag reread_known_;
  bool reread_ = false;
};

// How the backward op's arguments come from a forward call: after one gradient per forward output,
// the tensors it reads, each a forward input or output of the same name; and which forward input
// each of its outputs (grad_<input>) is the gradient of.
struct BackwardPlan {
  struct Saved {
    bool is_output;
    size_t index;
  };
  std::vector<Saved> saved;
  std::vector<size_t> grad_of;
};

BackwardPlan plan_backward(const c10::FunctionSchema& forward, const c10::FunctionSchema& backward) {
  const std::string op = op_name(forward) + ": ";
  const std::vector<std::string> inputs = tensor_names(forward);
  std::vector<std::string> outputs;
  for (const c10::Argument& r : forward.returns()) {
    outputs.push_back(r.name());
  }
  const std::vector<std::string> reads = tensor_names(backward);
  BackwardPlan plan;
  for (size_t i = outputs.size(); i < reads.size(); ++i) {
    const auto input = std::find(inputs.begin(), inputs.end(), reads[i]);
    const auto output = std::find(outputs.begin(), outputs.end(), reads[i]);
    TORCH_CHECK(input != inputs.end() || output != outputs.end(), op, "the backward reads ", reads[i],
                ", which is neither an input nor an output of the forward");
    plan.saved.push_back(input != inputs.end() ? BackwardPlan::Saved{false, size_t(input - inputs.begin())}
                                               : BackwardPlan::Saved{true, size_t(output - outputs.begin())});
  }
  for (const c10::Argument& r : backward.returns()) {
    const auto input = std::find(inputs.begin(), inputs.end(), r.name().substr(5));  // grad_<input>
    TORCH_CHECK(r.name().rfind("grad_", 0) == 0 && input != inputs.end(), op, "the backward's output ", r.name(),
                " names no input of the forward (grad_<input>)");
    plan.grad_of.push_back(size_t(input - inputs.begin()));
  }
  return plan;
}

// The node a recorded forward call leaves in the autograd graph: what its backward op reads (saved
// tensors and scalars), and the outputs' shapes, for an output whose gradient is absent.
struct OpBackward final : public torch::autograd::Node {
  std::string name() const override { return op_name(backward->schema()) + "Backward"; }

  variable_list apply(variable_list&& grads) override {
    variable_list out(num_outputs());
    if (std::none_of(grads.begin(), grads.end(), [](const at::Tensor& g) { return g.defined(); })) {
      return out;
    }
    torch::jit::Stack stack;
    for (size_t i = 0; i < grads.size(); ++i) {
      torch::jit::push(stack, grads[i].defined() ? grads[i] : at::zeros_symint(output_sizes[i], output_options[i]));
    }
    {
      const std::lock_guard<std::mutex> lock(mutex_);  // the saved variables, under concurrent backwards
      for (size_t i = 0; i < saved.size(); ++i) {
        torch::jit::push(stack, saved_is_output[i] ? saved[i].unpack(getptr()) : saved[i].unpack());
      }
    }
    for (const c10::IValue& scalar : scalars) {
      torch::jit::push(stack, scalar);
    }
    // Through the dispatcher: under create_graph the backward op reaches autograd, which has no
    // formula for it and says so where a second derivative is taken.
    backward->callBoxed(&stack);
    for (size_t i = 0; i < grad_of.size(); ++i) {
      out[grad_of[i]] = std::move(stack[i]).toTensor();
    }
    return out;
  }

  void release_variables() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (torch::autograd::SavedVariable& s : saved) {
      s.reset_data();
    }
  }

  const c10::OperatorHandle* backward = nullptr;
  std::vector<torch::autograd::SavedVariable> saved;
  std::vector<bool> saved_is_output;
  std::vector<c10::IValue> scalars;
  std::vector<size_t> grad_of;
  std::vector<std::vector<c10::SymInt>> output_sizes;
  std::vector<at::TensorOptions> output_options;
};

// torch holds autograd nodes by std::shared_ptr (torch 2.11) or by c10::intrusive_ptr (newer
// releases); an edge's pointer type tells which, and the node is made the way that release makes
// its own. deleteNode, torch 2.11's deleter (it frees long chains of nodes without deep recursion),
// is found through the node's base class when the branch is instantiated: newer releases have none.
using NodePtr = decltype(torch::autograd::Edge::function);

template <class T>
auto new_node() {
  if constexpr (std::is_same_v<NodePtr, std::shared_ptr<torch::autograd::Node>>) {
    return std::shared_ptr<T>(new T(), [](T* node) { deleteNode(node); });
  } else {
    return c10::make_intrusive<T>();
  }
}

constexpr const char* kNoForwardAd =
    ": forward-mode AD (the dual tensors of torch.autograd.forward_ad) is not supported; compute the "
    "op's forward derivative with torch.func.jvp over its reference instead";

// The forward's autograd kernel, in C++ (as torch's own ops record theirs), not torch.library's
// Python register_autograd: a call then costs what a native op's does. It records a call only
// where a gradient is wanted, and calls the kernels below autograd through the dispatcher, so that
// under torch.compile the call reaches the fake kernels and the tracer records both ops.
class AutogradKernel final : public c10::OperatorKernel {
 public:
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
    const c10::FunctionSchema& schema = op.schema();
    std::vector<at::Tensor> inputs;
    std::vector<c10::IValue> scalars;
    bool wants_grad = false;
    for (const c10::IValue& value : torch::jit::last(*stack, schema.arguments().size())) {
      if (value.isTensor()) {
        const at::Tensor& t = value.toTensor();
        TORCH_CHECK(!t.defined() || !t._fw_grad(/*level=*/0).defined(), op_name(schema), kNoForwardAd);
        wants_grad = wants_grad || (t.defined() && t.requires_grad());
        inputs.push_back(t);
      } else {
        scalars.push_back(value);
      }
    }
    wants_grad = wants_grad && at::GradMode::is_enabled();
    {
      const at::AutoDispatchBelowADInplaceOrView below_autograd;
      op.redispatchBoxed(keys & c10::after_autograd_keyset, stack);
    }
    if (!wants_grad) {
      return;
    }
    std::call_once(planned_, [&] {
      const std::string& name = schema.name();
      backward_ = &find_op(name.substr(0, name.size() - 4) + "_bwd");
      plan_ = plan_backward(schema, backward_->schema());
    });
    std::vector<at::Tensor> outputs;
    for (const c10::IValue& value : torch::jit::last(*stack, schema.returns().size())) {
      outputs.push_back(value.toTensor());
    }
    auto node = new_node<OpBackward>();
    node->backward = backward_;
    node->grad_of = plan_.grad_of;
    node->scalars = std::move(scalars);
    for (const at::Tensor& y : outputs) {
      node->output_sizes.push_back(y.sym_sizes().vec());
      node->output_options.push_back(y.options());
    }
    node->set_next_edges(torch::autograd::collect_next_edges(inputs));
    torch::autograd::set_history(outputs, node);
    for (const BackwardPlan::Saved& s : plan_.saved) {
      node->saved.emplace_back(s.is_output ? outputs[s.index] : inputs[s.index], s.is_output);
      node->saved_is_output.push_back(s.is_output);
    }
  }

 private:
  std::once_flag planned_;
  const c10::OperatorHandle* backward_ = nullptr;
  BackwardPlan plan_;
};

constexpr const char* kNamespace = "cuop_my_cuda_op";

// The kernels' registrations, one library per dispatch key, alive as long as the extension is loaded.
torch::Library& library(c10::DispatchKey key) {
  static std::map<c10::DispatchKey, std::unique_ptr<torch::Library>> libraries;
  auto& lib = libraries[key];
  if (!lib) {
    lib = std::make_unique<torch::Library>(torch::Library::IMPL, kNamespace, key, __FILE__, __LINE__);
  }
  return *lib;
}

}  // namespace

bool add_kernel(const std::string& name, Device device, Kernel kernel, bool forward) {
  const auto boxed = [&] {
    return torch::CppFunction::makeFromBoxedFunctor(std::make_unique<BoxedKernel>(kernel, forward));
  };
  library(device == kCuda ? c10::DispatchKey::CUDA : c10::DispatchKey::CPU).impl(name.c_str(), boxed());
  if (forward && device == kCuda) {
    // One autograd kernel for both devices (the Autograd key covers AutogradCPU and AutogradCUDA).
    // The backward op has none: a second derivative is not supported.
    library(c10::DispatchKey::Autograd)
        .impl(name.c_str(), torch::CppFunction::makeFromBoxedFunctor(std::make_unique<AutogradKernel>()));
  }
  return true;
}

}  // namespace cuop_my_cuda_op
