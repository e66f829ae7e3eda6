// CustomCallRegistry: how the reference evaluator runs `custom-call` targets.
//
// A kernel receives the call, its operand values and the result value to fill in. For every
// output aliased to an operand (output_to_operand_aliasing) the evaluator has already placed
// that operand's value in the result, so an in-place kernel updates `result` directly: the
// aliased input and output are one buffer, as on the device. Unknown targets are a clear
// error naming the target. The kernel layer (src/insitu/kernel) registers its kernels here.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>

#include "insitu/ir/instruction.h"

namespace insitu {

class CustomCallRegistry {
 public:
  using Kernel = std::function<Status(const Instruction& call, std::span<const Literal* const> operands,
                                      Literal& result)>;

  // Registers `kernel` as `target`; `origin` names where it comes from (a plugin path, "builtin")
  // so that a duplicate name can report both.
  Status register_kernel(std::string target, Kernel kernel, std::string origin = "builtin");
  const Kernel* find(std::string_view target) const;
  // Where `target` was registered from; empty if it is not registered.
  std::string origin(std::string_view target) const;

  // The process-wide registry (builtin kernels and plugins).
  static CustomCallRegistry& global();

 private:
  struct Entry {
    Kernel kernel;
    std::string origin;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Entry, std::less<>> kernels_;
};

// Runs a custom-call through `registry`: aliased outputs start as their operand's value, the
// kernel fills in the result. Shared by the reference evaluator and the runtime's fallback. An
// unknown target is a located error naming it.
StatusOr<Literal> run_custom_call_kernel(const Instruction& call, std::span<const Literal* const> operands,
                                         const CustomCallRegistry* registry);

}  // namespace insitu
