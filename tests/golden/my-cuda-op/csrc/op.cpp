// The checks every op's call goes through, and how an op's kernels reach Python:
// boxed kernels registered with the dispatcher through the stable ABI's C shim, under the schemas
// my_cuda_op/_registration.py defines (with the autograd formula, in Python).
#include "op.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace cuop_my_cuda_op {
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
constexpr const char* kDtypeNames = "float32, float16, bfloat16, float64";
// Where the ops are declared, for messages.
constexpr const char* kDeclarations = "my_cuda_op/ops/";

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
    OP_CHECK(t.is_cuda() || t.is_cpu(), op_name(schema), ": ", name, " is on ", t.device(),
             "; move it to a CUDA device or the CPU");
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

constexpr const char* kNamespace = "cuop_my_cuda_op";

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
           "a kernel of my_cuda_op was called before its op was declared; import "
           "my_cuda_op rather than loading my_cuda_op._C alone");
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

}  // namespace cuop_my_cuda_op
