#include "insitu/ir/grid_loop.h"

namespace insitu {
namespace {

std::string_view attribute(const Instruction& instruction, std::string_view key) {
  for (const auto& [name, value] : instruction.frontend_attributes)
    if (name == key) return value;
  return {};
}

}  // namespace

std::optional<GridLoopInfo> grid_loop_info(const Instruction& loop) {
  if (loop.opcode() != Opcode::kWhile) return std::nullopt;
  const std::string_view kernel = attribute(loop, kGridKernelAttribute);
  if (kernel.empty()) return std::nullopt;
  return GridLoopInfo{kernel, attribute(loop, kGridShapeAttribute), attribute(loop, kGridAliasesAttribute)};
}

}  // namespace insitu
