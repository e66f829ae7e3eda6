// The kernel registry and static registration (registry.h).
#include "insitu/kernel/registry.h"

#include <algorithm>
#include <atomic>
#include <dlfcn.h>

#include <iostream>
#include <memory>
#include <mutex>

#include "insitu/evaluator/custom_call_table.h"
#include "insitu/kernel/bindings.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

// Static registrations that failed (e.g. duplicate names), kept for the CLI to report.
struct StaticErrors {
  std::mutex mutex;
  std::vector<Status> errors;
};

StaticErrors& static_errors() {
  static StaticErrors* instance = new StaticErrors();
  return *instance;
}

}  // namespace

Status validate_kernel_spec(const KernelSpec& spec) {
  const std::string kernel = str_cat("kernel \"", spec.name, "\"");
  if (spec.name.empty()) return invalid_argument("a kernel needs a name (the custom_call_target that calls it)");
  if (!spec.body) return invalid_argument(str_cat(kernel, " has no body"));
  if (spec.specialize) return ok_status();  // shapes, grid and blocks are known per call: checked then
  if (!spec.dimension_semantics.empty() && spec.dimension_semantics.size() != spec.grid.size())
    return invalid_argument(str_cat(kernel, ": the grid has rank ", spec.grid.size(), " but dimension_semantics has ",
                                    spec.dimension_semantics.size(), " entries; give one per grid axis"));
  for (size_t d = 0; d < spec.grid.size(); ++d)
    if (spec.grid[d] < 0) return invalid_argument(str_cat(kernel, ": grid axis ", d, " is negative (", spec.grid[d], ")"));
  if (!spec.out_shapes.empty() && spec.out_shapes.size() != spec.out_specs.size())
    return invalid_argument(str_cat(kernel, " declares ", spec.out_shapes.size(), " out_shapes but ", spec.out_specs.size(),
                                    " out_specs; give one BlockSpec per output"));
  for (size_t o = 0; o < spec.out_shapes.size(); ++o) {
    const Shape& shape = spec.out_shapes[o];
    if (!shape.is_array()) return invalid_argument(str_cat(kernel, ": output ", o, " must be an array shape"));
    const std::vector<int64_t>& block = spec.out_specs[o].block_shape;
    if (!block.empty() && static_cast<int64_t>(block.size()) != shape.rank())
      return invalid_argument(str_cat(kernel, ": output ", o, " (", shape.to_string(false),
                                      ") has a BlockSpec with block_shape of rank ", block.size()));
  }
  for (const auto& specs : {&spec.in_specs, &spec.out_specs})
    for (size_t i = 0; i < specs->size(); ++i)
      for (int64_t b : (*specs)[i].block_shape)
        if (b <= 0)
          return invalid_argument(str_cat(kernel, ": ", specs == &spec.in_specs ? "input " : "output ", i,
                                          " has a block dimension ", b, "; block dimensions must be positive"));
  std::vector<bool> output_taken(spec.out_specs.size(), false);
  for (const auto& [i, o] : spec.input_output_aliases) {
    if (i < 0 || i >= static_cast<int64_t>(spec.in_specs.size()) || o < 0 ||
        o >= static_cast<int64_t>(spec.out_specs.size()))
      return invalid_argument(str_cat(kernel, ": input_output_aliases entry (", i, ", ", o, ") is out of range (",
                                      spec.in_specs.size(), " inputs, ", spec.out_specs.size(), " outputs)"));
    if (output_taken[o]) return invalid_argument(str_cat(kernel, ": output ", o, " is aliased to two inputs"));
    output_taken[o] = true;
  }
  return ok_status();
}

CustomCallSignature kernel_signature(const KernelSpec& spec) {
  CustomCallSignature signature;
  signature.out_shapes = spec.out_shapes;
  signature.input_output_aliases = spec.input_output_aliases;
  signature.output_count =
      std::max<int64_t>({static_cast<int64_t>(spec.out_specs.size()), static_cast<int64_t>(spec.out_shapes.size()), 1});
  return signature;
}

Status register_kernel(KernelSpec spec, std::string origin) {
  return register_kernel(std::move(spec), std::move(origin), CustomCallTable::global());
}

Status register_kernel(KernelSpec spec, std::string origin, CustomCallTable& table) {
  INSITU_RETURN_IF_ERROR(validate_kernel_spec(spec));
  auto shared = std::make_shared<const KernelSpec>(std::move(spec));
  CustomCallTarget target{.name = shared->name,
                          .signature = kernel_signature(*shared),
                          .evaluate = make_evaluator_kernel(shared),
                          .origin = std::move(origin)};
  target.parts.set(NativeCustomCallPart{make_native_kernel(shared)});
  target.parts.set(KernelGridPart{make_kernel_grid_layout(shared)});
  return table.add(std::move(target));
}

std::string current_library_origin(const void* address_in_library) {
  Dl_info info;
  if (dladdr(address_in_library, &info) == 0 || info.dli_fname == nullptr) return "builtin";
  Dl_info main_info;
  void* main_handle = dlopen(nullptr, RTLD_NOW);
  // The main program's own symbols resolve to its path; those are builtin kernels.
  if (main_handle != nullptr && dladdr(reinterpret_cast<const void*>(&current_library_origin), &main_info) != 0 &&
      main_info.dli_fbase == info.dli_fbase)
    return "builtin";
  return info.dli_fname;
}

namespace internal {

std::atomic<int64_t> g_static_registrations{0};

bool register_static_kernel(KernelSpec (*factory)(), const void* address_in_library) {
  g_static_registrations.fetch_add(1);
  Status status = register_kernel(factory(), current_library_origin(address_in_library));
  if (status.ok()) return true;
  StaticErrors& e = static_errors();
  std::lock_guard<std::mutex> lock(e.mutex);
  e.errors.push_back(std::move(status));
  return false;
}

}  // namespace internal

int64_t static_registration_count() { return internal::g_static_registrations.load(); }

std::vector<Status> take_static_registration_errors() {
  StaticErrors& e = static_errors();
  std::lock_guard<std::mutex> lock(e.mutex);
  std::vector<Status> errors = std::move(e.errors);
  e.errors.clear();
  return errors;
}

}  // namespace insitu
