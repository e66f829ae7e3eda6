#include "insitu/ir/grid_loop.h"

#include <algorithm>

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
  return GridLoopInfo{kernel, attribute(loop, kGridShapeAttribute), attribute(loop, kGridAliasesAttribute),
                      attribute(loop, kGridParallelAttribute), attribute(loop, kGridInOrderAttribute)};
}

std::optional<std::vector<int64_t>> grid_sizes(std::string_view grid) {
  std::vector<int64_t> sizes;
  if (grid == "()") return sizes;
  while (!grid.empty()) {
    const size_t end = std::min(grid.find('x'), grid.size());
    int64_t size = 0;
    if (end == 0 || end > 18) return std::nullopt;
    for (char c : grid.substr(0, end)) {
      if (c < '0' || c > '9') return std::nullopt;
      size = size * 10 + (c - '0');
    }
    sizes.push_back(size);
    grid.remove_prefix(end == grid.size() ? end : end + 1);
  }
  return sizes;
}

}  // namespace insitu
