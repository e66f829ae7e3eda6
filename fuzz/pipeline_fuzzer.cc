// libFuzzer target: the whole pipeline. A module that parses and verifies is optimized, built
// into an Executable and run on small deterministic arguments; the reference evaluator runs
// the module as parsed on the same arguments; every result leaf must be bit-identical (the
// differential tests' rule). Any error is fine (a located Status), a crash, a hang past the
// deadline or a difference is a finding (abort).
//
// Bounded so each input costs milliseconds: at most 400 instructions, 1 MiB of parameters,
// values of at most 16 MiB, a 64 MiB memory budget and a 2 s deadline for each of the two runs.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "insitu/evaluator/element_arithmetic.h"
#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/parser.h"
#include "insitu/ir/printer.h"
#include "insitu/ir/verifier.h"
#include "insitu/passes/optimize.h"
#include "insitu/runtime/executable.h"

namespace {

using namespace insitu;

constexpr int64_t kMaxInstructions = 400;
constexpr int64_t kMaxParameterBytes = 1 << 20;
constexpr double kDeadlineSeconds = 2;

// Deterministic arguments from the parameter shapes: small integers (loop bounds and indices
// stay small), floats in [-2, 2].
Literal make_argument(const Shape& shape, uint64_t& state) {
  Literal argument(shape);
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33);
  };
  auto fill = [&](Literal& leaf) {
    if (!leaf.shape().is_array()) return;
    dispatch_element_type(leaf.shape().element_type(), [&](auto tag) {
      using T = decltype(tag);
      for (auto& value : leaf.template data<T>()) {
        if constexpr (std::is_same_v<T, bool>) value = (next() & 1) != 0;
        else if constexpr (std::is_integral_v<T> || kIsSubByteInt<T>) value = convert_value<T>(next() % 4);
        else if constexpr (kIsSmallFloat<T>)
          value = T::from_float(static_cast<float>(static_cast<int>(next() % 4001) - 2000) / 1000.0f);
        else value = convert_value<T>(static_cast<double>(static_cast<int>(next() % 4001) - 2000) / 1000.0);
      }
    });
  };
  if (argument.shape().is_tuple()) {
    for (Literal& element : argument.elements()) fill(element);
  } else {
    fill(argument);
  }
  return argument;
}

void flatten(const Literal& literal, std::vector<Literal>& leaves) {
  if (literal.shape().is_tuple()) {
    for (const Literal& element : literal.elements()) flatten(element, leaves);
  } else if (literal.shape().is_array()) {
    leaves.push_back(literal);
  }
}

[[noreturn]] void finding(const std::string& what, const Module& module) {
  std::fprintf(stderr, "pipeline fuzzer finding: %s\n%s\n", what.c_str(), print_module(module).c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  StatusOr<std::unique_ptr<Module>> parsed = parse_module(text);
  if (!parsed.ok() || !verify_module(**parsed).ok()) return 0;
  const Module& module = **parsed;
  int64_t instructions = 0;
  for (const Computation* computation : module.computations()) instructions += computation->instruction_count();
  if (instructions > kMaxInstructions) return 0;
  int64_t parameter_bytes = 0;
  for (const Instruction* parameter : module.entry()->parameters()) parameter_bytes += parameter->shape().byte_size();
  if (parameter_bytes > kMaxParameterBytes) return 0;
  // Custom calls need kernels this target does not load; skip them rather than report them.
  // So are values over 16 MiB (the evaluator would make them, at a cost out of scale here).
  for (const Computation* computation : module.computations())
    for (const Instruction* instruction : computation->instructions())
      if (instruction->opcode() == Opcode::kCustomCall || instruction->shape().byte_size() > (16 << 20)) return 0;

  uint64_t state = size;
  std::vector<Literal> arguments;
  for (const Instruction* parameter : module.entry()->parameters())
    arguments.push_back(make_argument(parameter->shape(), state));

  EvaluatorOptions evaluator_options;
  evaluator_options.timeout_seconds = kDeadlineSeconds;
  StatusOr<Literal> expected = evaluate_module(module, arguments, evaluator_options);
  if (!expected.ok()) return 0;  // a located error (a deadline, an unsupported op): both sides may refuse

  StatusOr<OptimizedModule> optimized = optimize_module(module.clone());
  if (!optimized.ok()) {
    // The evaluator ran it, so the pipeline refusing it must be a user-facing limit, never a
    // pass's internal error.
    if (optimized.status().code() == StatusCode::kInternal) finding(optimized.status().to_string(), module);
    return 0;
  }
  ExecutableOptions executable_options;
  executable_options.max_memory_bytes = 64 << 20;
  StatusOr<std::unique_ptr<Executable>> executable = Executable::create(std::move(*optimized), executable_options);
  if (!executable.ok()) {
    if (executable.status().code() == StatusCode::kInternal) finding(executable.status().to_string(), module);
    return 0;
  }
  std::vector<Literal> leaves;
  for (const Literal& argument : arguments) flatten(argument, leaves);
  std::vector<BufferHandle> handles;
  for (const Literal& leaf : leaves) handles.push_back(*BufferHandle::from_literal(leaf));
  ExecuteOptions execute_options;
  execute_options.threads = 1;
  // Half the inputs donate every argument (in-place updates, donated results), the other half
  // none (runtime copy protection of may-alias inputs); a must-alias parameter is always donated.
  bool must_alias = false;
  for (const InputOutputAlias& alias : module.config().input_output_alias) must_alias |= alias.kind == AliasKind::kMustAlias;
  if (must_alias || size % 2 == 1) execute_options.donate.assign(handles.size(), true);
  execute_options.timeout_seconds = kDeadlineSeconds;
  StatusOr<std::vector<BufferHandle>> results = (*executable)->execute(handles, execute_options);
  if (!results.ok()) {
    if (results.status().code() == StatusCode::kResourceExhausted) return 0;  // its deadline
    finding("the evaluator ran the module but the runtime failed: " + results.status().to_string(), module);
  }
  std::vector<Literal> expected_leaves;
  flatten(*expected, expected_leaves);
  if (expected_leaves.size() != results->size()) finding("the runtime returned a different number of results", module);
  for (size_t i = 0; i < results->size(); ++i) {
    StatusOr<Literal> actual = (*results)[i].to_literal();
    if (!actual.ok() || !(*actual == expected_leaves[i]))
      finding("result leaf " + std::to_string(i) + " differs from the evaluator's", module);
  }
  return 0;
}
