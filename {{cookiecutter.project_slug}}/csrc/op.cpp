// The checks every op's call goes through, and how an op's kernels reach Python:
{%- if cookiecutter.__stable == 'True' %}
// boxed kernels registered with the dispatcher through the stable ABI's C shim, under the schemas
// {{cookiecutter.package_name}}/_registration.py defines (with the autograd formula, in Python).
{%- elif cookiecutter.registration == 'torch_library' %}
// boxed kernels registered with the dispatcher under the schemas {{cookiecutter.package_name}}/_registration.py
// defines, and the forward's autograd kernel, in C++.
{%- else %}
// a table of kernels by name and device that the pybind11 module's call() looks up.
{%- endif %}
#include "op.h"
{% if cookiecutter.registration == 'torch_library' and cookiecutter.__stable != 'True' %}
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/library.h>
{% endif %}
#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace {{cookiecutter.__ns}} {
// The op's name in messages: the schema's without namespace and direction (scaled_gelu).
std::string op_name(const Schema& schema) {
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
constexpr ScalarType kDtypes[] = {OP_DTYPES};
constexpr const char* kDtypeNames = "{{cookiecutter.__dtypes}}";
// Where the ops are declared, for messages.
constexpr const char* kDeclarations = "{{cookiecutter.package_name}}/ops/";

// The names of the schema's tensor arguments, in order.
std::vector<std::string> tensor_names(const Schema& schema) {
  std::vector<std::string> names;
  for (const auto& argument : schema.arguments()) {
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
  const Schema& schema = *call.schema;
  const auto& args = schema.arguments();
  const int tensors = int(std::count_if(args.begin(), args.end(), is_tensor));
  const int declared_outputs = int(schema.returns().size());
  const int declared_params = int(args.size()) - tensors;
  OP_CHECK(inputs == tensors && outputs == declared_outputs && params == declared_params, op_name(schema), ": ",
           schema.name(), " is declared with ", tensors, " tensors, ", declared_params, " scalars and ",
           declared_outputs, " outputs, but its functor takes ", inputs, " values, has ", params,
           " fields and returns ", outputs, " values; make the functor match its declaration in ", kDeclarations);
  const Tensor& first = call.tensors[0];
  for (size_t i = 0; i < call.tensors.size(); ++i) {
    const Tensor& t = call.tensors[i];
    const std::string& name = args[i].name();
    OP_CHECK(t.defined(), op_name(schema), ": ", name, " is an undefined tensor; pass a tensor");
    OP_CHECK(std::find(std::begin(kDtypes), std::end(kDtypes), t.scalar_type()) != std::end(kDtypes), op_name(schema),
             ": ", name, " has dtype ", t.scalar_type(), ", but this build has kernels for ", kDtypeNames,
             " only; convert it (e.g. .float()) or enable that dtype when generating the project");
{%- if cookiecutter.__cpu == 'True' %}
    OP_CHECK(t.is_cuda() || t.is_cpu(), op_name(schema), ": ", name, " is on ", t.device(),
             "; move it to a CUDA device or the CPU");
{%- else %}
    OP_CHECK(t.is_cuda(), op_name(schema), ": ", name, " is on ", t.device(),
             ", but this build has CUDA kernels only; move it with .cuda() "
             "(or generate the project with cpu_impl=yes)");
{%- endif %}
    OP_CHECK(t.device() == first.device(), op_name(schema), ": ", name, " is on ", t.device(), " but ", args[0].name(),
             " is on ", first.device(), "; put both on one device");
    OP_CHECK(t.scalar_type() == first.scalar_type(), op_name(schema), ": ", name, " has dtype ", t.scalar_type(),
             " but ", args[0].name(), " has dtype ", first.scalar_type(), "; convert one to the other");
  }
}

void check_same_shapes(const Call& call) {
  const auto& args = call.schema->arguments();
  const Tensor& first = call.tensors[0];
  for (size_t i = 1; i < call.tensors.size(); ++i) {
    OP_CHECK(call.tensors[i].sizes().equals(first.sizes()), op_name(*call.schema), ": ", args[i].name(), " has shape ",
             call.tensors[i].sizes(), " but ", args[0].name(), " has shape ", first.sizes(),
             "; they must have the same shape");
  }
}

std::vector<Tensor> outputs_like_first(const Call& call, int count) {
  std::vector<Tensor> out;
  for (int i = 0; i < count; ++i) {
    out.push_back(new_contiguous_like(call.tensors[0]));
  }
  return out;
}

bool backward_reads_inputs(const Schema& forward, const Schema& backward) {
  const std::vector<std::string> inputs = tensor_names(forward);
  for (const std::string& name : tensor_names(backward)) {
    if (std::find(inputs.begin(), inputs.end(), name) != inputs.end()) {
      return true;
    }
  }
  return false;
}
{%- if cookiecutter.__stable == 'True' %}

Schema::Schema(const std::string& text) {
  const size_t open = text.find('(');
  const size_t close = text.find(')', open);
  const size_t returns = text.find('(', close);
  OP_CHECK(open != std::string::npos && returns != std::string::npos && text.back() == ')', "cannot read the schema '",
           text, "': expected name(arguments) -> (returns)");
  // "Tensor x, float scale=1.0": each item a type and a name, with an optional default.
  const auto items = [&](size_t begin, size_t end) {
    std::vector<Argument> out;
    while (begin < end) {
      size_t comma = text.find(',', begin);
      comma = comma == std::string::npos || comma > end ? end : comma;
      const std::string item = text.substr(begin, comma - begin);
      const size_t first = item.find_first_not_of(' ');
      const size_t space = item.find(' ', first);
      out.push_back({item.substr(first, space - first), item.substr(space + 1, item.find('=') - space - 1)});
      begin = comma + 1;
    }
    return out;
  };
  name_ = text.substr(0, open);
  arguments_ = items(open + 1, close);
  returns_ = items(returns + 1, text.size() - 1);
}

namespace {

// What a kernel needs of its op that the stable ABI's stack does not say: the schema (the names in
// messages, which arguments are tensors, the scalars' types), declared by the package once the
// kernels are registered.
struct Entry {
  Schema schema;
  bool declared = false;
  bool reread = false;
};

// By op name; a std::map, so that an entry stays where it is while others are added.
std::map<std::string, Entry>& entries() {
  static std::map<std::string, Entry> table;
  return table;
}

std::map<Kernel, Entry*>& entry_of_kernel() {
  static std::map<Kernel, Entry*> table;
  return table;
}

constexpr const char* kNamespace = "{{cookiecutter.__ns}}";

// The kernels' registrations, one library per dispatch key, alive as long as the extension is loaded.
torch::stable::detail::StableLibrary& library(const std::string& key) {
  static std::map<std::string, std::unique_ptr<torch::stable::detail::StableLibrary>> libraries;
  auto& lib = libraries[key];
  if (!lib) {
    lib = std::make_unique<torch::stable::detail::StableLibrary>(torch::stable::detail::StableLibrary::Kind::IMPL,
                                                                 kNamespace, key.c_str(), __FILE__, __LINE__);
  }
  return *lib;
}

}  // namespace

bool add_kernel(const std::string& name, Device device, KernelRef kernel, bool /*forward*/) {
  entry_of_kernel()[kernel.kernel] = &entries()[name];
  library(device == kCuda ? "CUDA" : "CPU").impl(name.c_str(), kernel.boxed);
{%- if cookiecutter.__cpu != 'True' %}
  // No CPU kernels: a CPU tensor reaches the same checks, which say what to do.
  library("CPU").impl(name.c_str(), kernel.boxed);
{%- endif %}
  return true;
}

void declare(const std::string& forward, const std::string& backward) {
  const Schema schemas[] = {Schema(forward), Schema(backward)};
  for (const Schema& schema : schemas) {
    const std::string name = schema.name().substr(schema.name().find("::") + 2);
    auto it = entries().find(name);
    OP_CHECK(it != entries().end(), name,
             ": the package declares this op, but the extension has no kernels for it; "
             "register them in csrc/ops/ (register_kernels) and rebuild");
    it->second.schema = schema;
    it->second.declared = true;
  }
  entries()[op_name(schemas[0]) + "_fwd"].reread = backward_reads_inputs(schemas[0], schemas[1]);
}

// A call off the stable ABI's stack: each argument converted by its schema type, the kernel's
// outputs put back in their place.
void run_boxed(Kernel kernel, StableIValue* stack, uint64_t num_args, uint64_t /*num_outputs*/) {
  const Entry& entry = *entry_of_kernel().at(kernel);
  OP_CHECK(entry.declared && entry.schema.arguments().size() == num_args,
           "a kernel of {{cookiecutter.package_name}} was called before its op was declared; import "
           "{{cookiecutter.package_name}} rather than loading {{cookiecutter.package_name}}._C alone");
  Call call;
  call.schema = &entry.schema;
  call.reread = entry.reread;
  for (uint64_t i = 0; i < num_args; ++i) {
    const std::string& type = entry.schema.arguments()[i].type;
    if (type == "Tensor") {
      call.tensors.push_back(torch::stable::detail::to<Tensor>(stack[i]));
    } else if (type == "float") {
      call.scalars.emplace_back(torch::stable::detail::to<double>(stack[i]));
    } else if (type == "int") {
      call.scalars.emplace_back(torch::stable::detail::to<int64_t>(stack[i]));
    } else {
      call.scalars.emplace_back(int64_t(torch::stable::detail::to<bool>(stack[i])));
    }
  }
  std::vector<Tensor> out = kernel(call);
  for (size_t i = 0; i < out.size(); ++i) {
    stack[i] = torch::stable::detail::from(std::move(out[i]));
  }
}
{%- elif cookiecutter.registration == 'torch_library' %}

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

constexpr const char* kNamespace = "{{cookiecutter.__ns}}";

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

bool add_kernel(const std::string& name, Device device, KernelRef kernel, bool forward) {
  const auto boxed = [&] {
    return torch::CppFunction::makeFromBoxedFunctor(std::make_unique<BoxedKernel>(kernel, forward));
  };
  library(device == kCuda ? c10::DispatchKey::CUDA : c10::DispatchKey::CPU).impl(name.c_str(), boxed());
{%- if cookiecutter.__cpu != 'True' %}
  // No CPU kernels: a CPU tensor reaches the same checks, which say what to do.
  library(c10::DispatchKey::CPU).impl(name.c_str(), boxed());
{%- endif %}
  static std::set<std::string> with_autograd;
  if (forward && with_autograd.insert(name).second) {
    // One autograd kernel for both devices (the Autograd key covers AutogradCPU and AutogradCUDA),
    // with the first device's kernels (a USE_CUDA=0 build has the CPU's alone). The backward op has
    // none: a second derivative is not supported.
    library(c10::DispatchKey::Autograd)
        .impl(name.c_str(), torch::CppFunction::makeFromBoxedFunctor(std::make_unique<AutogradKernel>()));
  }
  return true;
}
{%- else %}

namespace {

struct Entry {
  c10::FunctionSchema schema;
  Kernel kernels[2] = {nullptr, nullptr};  // by Device
  bool reread = false;
};

std::map<std::string, Entry>& entries() {
  static std::map<std::string, Entry> table;
  return table;
}

}  // namespace

bool add_kernel(const std::string& name, Device device, KernelRef kernel, bool /*forward*/) {
  auto it = entries().find(name);
  if (it == entries().end()) {
    it = entries().emplace(name, Entry{c10::FunctionSchema(name, "", {}, {})}).first;
  }
  it->second.kernels[device] = kernel;
  return true;
}

void declare(const c10::FunctionSchema& forward, const c10::FunctionSchema& backward) {
  for (const c10::FunctionSchema* schema : {&forward, &backward}) {
    const std::string name = schema->name().substr(schema->name().find("::") + 2);
    auto it = entries().find(name);
    TORCH_CHECK(it != entries().end(), name,
                ": the package declares this op, but the extension has no kernels for it; "
                "register them in csrc/ops/ (register_kernels) and rebuild");
    it->second.schema = *schema;
  }
  const std::string name = forward.name().substr(forward.name().find("::") + 2);
  entries().at(name).reread = backward_reads_inputs(forward, backward);
}

std::vector<at::Tensor> call(const std::string& name, std::vector<at::Tensor> tensors,
                             const std::vector<double>& scalars) {
  const Entry& entry = entries().at(name);
  Call call;
  call.schema = &entry.schema;
  call.tensors = std::move(tensors);
  for (double s : scalars) {
    call.scalars.emplace_back(s);
  }
  call.reread = entry.reread;
  const bool on_cpu = !call.tensors.empty() && call.tensors[0].defined() && call.tensors[0].is_cpu();
  const Kernel kernel = on_cpu && entry.kernels[kCpu] ? entry.kernels[kCpu] : entry.kernels[kCuda];
  return kernel(call);
}
{%- endif %}

}  // namespace {{cookiecutter.__ns}}
