// insitu.Executable: a compiled module called from Python (its arguments converted by
// _insitu_array.cc, its results returned as insitu.Array), with the stats of its last call,
// the compiler's explanation, its parameters and the instructions left to the fallback. The
// GIL is released while a call runs. Calls from inside an XLA program are _insitu_xla_ffi.cc's.
#include <algorithm>
#include <string>
#include <vector>

#include "_insitu.h"
#include "insitu/ir/printer.h"
#include "insitu/runtime/stats_json.h"

namespace insitu::python {

PyExecutable::PyExecutable(std::unique_ptr<Executable> executable, std::string file, Explanation explanation,
                           double compile_seconds, int64_t unused_donors)
    : executable_(std::move(executable)),
      file_(std::move(file)),
      explain_text_(explanation_text(explanation)),
      explain_json_(explanation_json(explanation)),
      compile_seconds_(compile_seconds),
      unused_donors_(unused_donors) {
  executable_->module().entry()->root()->shape().for_each_leaf([&](const Shape& leaf, const ShapeIndex&) {
    if (leaf.is_array()) result_bytes_.push_back(leaf.byte_size());
  });
  for (const Executable::Argument& argument : executable_->arguments())
    xla_arguments_.push_back({argument.shape.byte_size(), aliased_result(argument)});
}

nb::object PyExecutable::call(nb::tuple args, nb::object donate, int threads, double timeout_seconds) {
  const std::vector<Executable::Argument>& parameters = executable_->arguments();
  if (args.size() != parameters.size())
    raise(invalid_argument(str_cat("the module takes ", parameters.size(), " argument(s) (one per parameter leaf), got ",
                                   args.size())));
  std::vector<bool> flags = donation_flags(donate, parameters.size());
  std::vector<BufferHandle> handles;
  int64_t argument_bytes_copied = 0;
  for (size_t i = 0; i < parameters.size(); ++i)
    handles.push_back(to_handle(args[i], parameters[i], flags[i], i, argument_bytes_copied));
  ExecuteOptions options{.donate = flags, .threads = threads, .timeout_seconds = timeout_seconds};
  StatusOr<std::vector<BufferHandle>> results = [&] {
    nb::gil_scoped_release release;
    return executable_->execute(std::move(handles), options);
  }();
  if (!results.ok()) raise(results.status(), file_);
  record_call(argument_bytes_copied, threads);
  const Shape& root = executable_->module().entry()->root()->shape();
  if (!root.is_tuple()) return nb::cast(Array(std::move(results->front())));
  nb::list leaves;
  for (BufferHandle& handle : *results) leaves.append(nb::cast(Array(std::move(handle))));
  return nb::tuple(leaves);
}

std::string PyExecutable::stats_json() const {
  const int threads = last_threads_.load(std::memory_order_acquire);
  if (threads < 0) return "null";
  const ExecutionStats stats = executable_->last_stats();
  nlohmann::json json = run_stats_json(*executable_, stats);
  json["argument_bytes_copied"] = last_argument_bytes_copied_.load(std::memory_order_relaxed);
  json["compile_seconds"] = compile_seconds_;
  json["unused_donors"] = unused_donors_;
  json["threads"] = threads;
  json["result_bytes_copied"] = stats.result_bytes_copied;
  return json.dump();
}

std::string PyExecutable::explain(const std::string& format) const {
  if (format == "text") return explain_text_;
  if (format == "json") return explain_json_;
  throw nb::value_error(str_cat("explain format must be 'text' or 'json', not '", format, "'").c_str());
}

std::string PyExecutable::optimized_text() const { return print_module(executable_->module()); }

nb::list PyExecutable::parameters() const {
  nb::list list;
  for (const Executable::Argument& argument : executable_->arguments()) {
    nb::dict entry;
    entry["name"] = argument.describe();
    entry["dtype"] = std::string(primitive_type_name(argument.shape.element_type()));
    entry["shape"] = nb::tuple(nb::cast(argument.shape.dimensions()));
    entry["aliased"] = argument.aliased_output.has_value();
    const int64_t output = aliased_result(argument);
    entry["aliased_output"] = output >= 0 ? nb::cast(output) : nb::none();
    entry["must_alias"] = argument.must_alias;
    list.append(entry);
  }
  return list;
}

std::vector<std::string> PyExecutable::fallback_ops() const {
  std::vector<std::string> names;
  for (const Instruction* instruction : executable_->fallback_instructions())
    names.push_back(str_cat(instruction->name(), " (", opcode_name(instruction->opcode()), ")"));
  return names;
}

int64_t PyExecutable::aliased_result(const Executable::Argument& argument) const {
  if (!argument.aliased_output) return -1;
  const ShapeIndex& index = *argument.aliased_output;
  const bool tuple = executable_->module().entry()->root()->shape().is_tuple();
  if (index.empty()) return tuple ? -1 : 0;
  return tuple && index.size() == 1 ? index[0] : -1;
}

std::vector<bool> PyExecutable::donation_flags(nb::object donate, size_t count) {
  std::vector<bool> flags(count, false);
  if (donate.is_none()) return flags;
  if (nb::isinstance<nb::bool_>(donate)) {
    std::fill(flags.begin(), flags.end(), nb::cast<bool>(donate));
    return flags;
  }
  auto mark = [&](nb::handle item) {
    const int64_t i = nb::cast<int64_t>(item);
    if (i < 0 || static_cast<size_t>(i) >= count)
      throw nb::index_error(str_cat("donate: argument ", i, " does not exist (the module takes ", count, ")").c_str());
    flags[i] = true;
  };
  if (nb::isinstance<nb::int_>(donate)) {
    mark(donate);
  } else {
    for (nb::handle item : donate) mark(item);
  }
  return flags;
}

}  // namespace insitu::python
