// A jax.export artifact's module (exported.h).
#include "insitu/stablehlo/exported.h"

#include <cstring>

#include "insitu/stablehlo/bytecode.h"
#include "insitu/support/str.h"

namespace insitu::stablehlo {
namespace {

// Fields of table Exported, by declaration order in JAX's schema.
constexpr int kPlatforms = 9;
constexpr int kOrderedEffects = 10;
constexpr int kUnorderedEffects = 11;
constexpr int kModule = 13;

// Little-endian reads, bounds-checked.
class FlatBuffer {
 public:
  explicit FlatBuffer(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  StatusOr<uint32_t> u32(uint64_t at) const {
    if (at + 4 > bytes_.size()) return error(at, "past the end");
    uint32_t value;
    std::memcpy(&value, bytes_.data() + at, 4);
    return value;
  }
  StatusOr<uint16_t> u16(uint64_t at) const {
    if (at + 2 > bytes_.size()) return error(at, "past the end");
    uint16_t value;
    std::memcpy(&value, bytes_.data() + at, 2);
    return value;
  }

  // Where field `index` of the table at `table` lies (0 when absent).
  StatusOr<uint64_t> field(uint64_t table, int index) const {
    INSITU_ASSIGN_OR_RETURN(uint32_t back, u32(table));
    const int64_t vtable = static_cast<int64_t>(table) - static_cast<int32_t>(back);
    if (vtable < 0) return error(table, "a table whose vtable lies before the file");
    INSITU_ASSIGN_OR_RETURN(uint16_t vtable_size, u16(static_cast<uint64_t>(vtable)));
    const uint64_t slot = 4 + 2 * static_cast<uint64_t>(index);
    if (slot + 2 > vtable_size) return uint64_t{0};
    INSITU_ASSIGN_OR_RETURN(uint16_t offset, u16(static_cast<uint64_t>(vtable) + slot));
    return offset == 0 ? uint64_t{0} : table + offset;
  }

  // A vector field: its element count and where its elements start (count 0 when absent).
  StatusOr<std::pair<uint64_t, uint64_t>> vector(uint64_t table, int index, uint64_t element_size) const {
    INSITU_ASSIGN_OR_RETURN(uint64_t at, field(table, index));
    if (at == 0) return std::pair<uint64_t, uint64_t>{0, 0};
    INSITU_ASSIGN_OR_RETURN(uint32_t relative, u32(at));
    const uint64_t start = at + relative;
    INSITU_ASSIGN_OR_RETURN(uint32_t count, u32(start));
    if (start + 4 + uint64_t{count} * element_size > bytes_.size()) return error(start, "a vector past the end");
    return std::pair<uint64_t, uint64_t>{count, start + 4};
  }

  Status error(uint64_t at, std::string_view message) const {
    return invalid_argument(str_cat("byte ", at, ": jax.export artifact: ", message));
  }

 private:
  std::span<const uint8_t> bytes_;
};

}  // namespace

StatusOr<std::span<const uint8_t>> read_exported(std::span<const uint8_t> bytes) {
  const FlatBuffer buffer(bytes);
  INSITU_ASSIGN_OR_RETURN(uint32_t root, buffer.u32(0));
  using Vector = std::pair<uint64_t, uint64_t>;  // count, start
  INSITU_ASSIGN_OR_RETURN(Vector module_field, buffer.vector(root, kModule, 1));
  const std::span<const uint8_t> module = bytes.subspan(module_field.second, module_field.first);
  if (!bytecode::is_bytecode(module)) return buffer.error(module_field.second, "its module is not MLIR bytecode");
  INSITU_ASSIGN_OR_RETURN(Vector platforms, buffer.vector(root, kPlatforms, 4));
  if (platforms.first > 1)
    return buffer.error(platforms.second, str_cat("exported for ", platforms.first, " platforms (its main takes a platform "
                                                  "index); insitu reads an export for one platform"));
  for (int effects : {kOrderedEffects, kUnorderedEffects}) {
    INSITU_ASSIGN_OR_RETURN(Vector listed, buffer.vector(root, effects, 4));
    if (listed.first > 0) return buffer.error(listed.second, "a function with effects (tokens) is not read");
  }
  return module;
}

bool is_exported(std::span<const uint8_t> bytes) {
  if (bytes.size() < 16 || bytecode::is_bytecode(bytes)) return false;
  const FlatBuffer buffer(bytes);
  StatusOr<uint32_t> root = buffer.u32(0);
  if (!root.ok() || *root >= bytes.size()) return false;
  StatusOr<std::pair<uint64_t, uint64_t>> module = buffer.vector(*root, kModule, 1);
  return module.ok() && module->first >= 4 && bytecode::is_bytecode(bytes.subspan(module->second, module->first));
}

}  // namespace insitu::stablehlo
