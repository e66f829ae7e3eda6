// The MLIR bytecode container (bytecode.h).
#include "insitu/stablehlo/bytecode.h"

#include <algorithm>
#include <bit>

#include "insitu/support/str.h"

namespace insitu::bytecode {
namespace {

constexpr uint8_t kMagic[] = {'M', 'L', 0xEF, 'R'};
// The versions read: 6 is what MLIR writes for StableHLO >= 0.15 (and JAX 0.12's artifacts).
constexpr uint64_t kVersion = 6;

enum Section : uint8_t {
  kString = 0,
  kDialect = 1,
  kAttrType = 2,
  kAttrTypeOffset = 3,
  kIR = 4,
  kResource = 5,
  kResourceOffset = 6,
  kDialectVersions = 7,
  kProperties = 8,
  kSectionCount = 9,
};

// An operation's encoding mask.
enum OpMask : uint8_t {
  kHasAttrs = 0x01,
  kHasResults = 0x02,
  kHasOperands = 0x04,
  kHasSuccessors = 0x08,
  kHasInlineRegions = 0x10,
  kHasUseListOrders = 0x20,
  kHasProperties = 0x40,
};

// Regions nest at most this deep (a hostile file cannot exhaust the stack).
constexpr int kMaxDepth = 256;

struct SectionSpan {
  std::span<const uint8_t> bytes;
  uint64_t offset = 0;
  bool present = false;
};

class IrReader {
 public:
  IrReader(File& file, Reader& reader) : file_(file), reader_(reader) {}

  Status block(Block& block, int depth, uint64_t& values) {
    INSITU_ASSIGN_OR_RETURN(uint64_t header, reader_.varint());
    const uint64_t operations = header >> 1;
    if (header & 1) {
      INSITU_ASSIGN_OR_RETURN(uint64_t arguments, reader_.count());
      for (uint64_t i = 0; i < arguments; ++i) {
        INSITU_ASSIGN_OR_RETURN(uint64_t type_and_flag, reader_.varint());
        INSITU_RETURN_IF_ERROR(check_index(type_and_flag >> 1, file_.types.size(), "type"));
        uint64_t location = 0;
        if (type_and_flag & 1) {
          INSITU_ASSIGN_OR_RETURN(location, reader_.varint());
          INSITU_RETURN_IF_ERROR(check_index(location, file_.attributes.size(), "location attribute"));
        }
        block.argument_types.push_back(type_and_flag >> 1);
        block.argument_locations.push_back(location);
      }
      values += arguments;
      INSITU_ASSIGN_OR_RETURN(uint8_t use_list_orders, reader_.byte());
      if (use_list_orders != 0) return reader_.error("use-list orders of block arguments are not supported");
    }
    // grown as read, not reserved: a count costs memory only for the ops the bytes really hold
    if (operations > reader_.left()) return reader_.error(str_cat("a block of ", operations, " operations in ", reader_.left(), " bytes"));
    for (uint64_t i = 0; i < operations; ++i) {
      block.operations.emplace_back();
      INSITU_RETURN_IF_ERROR(operation(block.operations.back(), depth));
      values += block.operations.back().result_types.size();
    }
    return ok_status();
  }

 private:
  Status check_index(uint64_t index, size_t size, std::string_view what) const {
    if (index < size) return ok_status();
    return reader_.error(str_cat(what, " index ", index, " out of range (", size, " in the file)"));
  }

  Status operation(Operation& op, int depth) {
    op.offset = reader_.offset();
    INSITU_ASSIGN_OR_RETURN(op.name, reader_.varint());
    INSITU_RETURN_IF_ERROR(check_index(op.name, file_.operation_names.size(), "operation name"));
    INSITU_ASSIGN_OR_RETURN(uint8_t mask, reader_.byte());
    if (mask & ~(kHasAttrs | kHasResults | kHasOperands | kHasSuccessors | kHasInlineRegions | kHasUseListOrders |
                 kHasProperties))
      return reader_.error(str_cat("unknown operation encoding bits 0x", std::hex, int{mask}));
    INSITU_ASSIGN_OR_RETURN(op.location, reader_.varint());
    INSITU_RETURN_IF_ERROR(check_index(op.location, file_.attributes.size(), "location attribute"));
    if (mask & kHasAttrs) {
      INSITU_ASSIGN_OR_RETURN(uint64_t attributes, reader_.varint());
      INSITU_RETURN_IF_ERROR(check_index(attributes, file_.attributes.size(), "attribute"));
      op.attributes = attributes;
    }
    if (mask & kHasProperties) {
      INSITU_ASSIGN_OR_RETURN(uint64_t properties, reader_.varint());
      INSITU_RETURN_IF_ERROR(check_index(properties, file_.properties.size(), "properties"));
      op.properties = properties;
    }
    if (mask & kHasResults) {
      INSITU_ASSIGN_OR_RETURN(uint64_t results, reader_.count());
      for (uint64_t i = 0; i < results; ++i) {
        INSITU_ASSIGN_OR_RETURN(uint64_t type, reader_.varint());
        INSITU_RETURN_IF_ERROR(check_index(type, file_.types.size(), "type"));
        op.result_types.push_back(type);
      }
    }
    if (mask & kHasOperands) {
      INSITU_ASSIGN_OR_RETURN(uint64_t operands, reader_.count());
      for (uint64_t i = 0; i < operands; ++i) {
        INSITU_ASSIGN_OR_RETURN(uint64_t value, reader_.varint());
        op.operands.push_back(ValueRef{nullptr, value, nullptr});  // a value number until resolved
      }
    }
    if (mask & kHasSuccessors) {
      INSITU_ASSIGN_OR_RETURN(uint64_t successors, reader_.count());
      for (uint64_t i = 0; i < successors; ++i) {
        INSITU_ASSIGN_OR_RETURN(uint64_t successor, reader_.varint());
        op.successors.push_back(successor);
      }
    }
    if (mask & kHasUseListOrders) return reader_.error("use-list orders are not supported");
    if (mask & kHasInlineRegions) {
      if (depth >= kMaxDepth) return reader_.error(str_cat("regions nested deeper than ", kMaxDepth));
      INSITU_ASSIGN_OR_RETURN(uint64_t regions_and_flag, reader_.varint());
      const uint64_t regions = regions_and_flag >> 1;
      op.isolated = (regions_and_flag & 1) != 0;
      if (regions > reader_.left()) return reader_.error(str_cat(regions, " regions in ", reader_.left(), " bytes"));
      if (op.isolated) {
        // an isolated region list is its own (lazily loadable) IR section
        const uint64_t start = reader_.offset();
        INSITU_ASSIGN_OR_RETURN(uint8_t id, reader_.byte());
        if (id != kIR) return reader_.error(str_cat("isolated regions in a section of kind ", int{id}, ", not IR (4)"));
        INSITU_ASSIGN_OR_RETURN(uint64_t length, reader_.varint());
        INSITU_ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, reader_.bytes(length));
        Reader nested(bytes, reader_.offset() - length);
        IrReader inner(file_, nested);
        for (uint64_t r = 0; r < regions; ++r) {
          op.regions.emplace_back();
          INSITU_RETURN_IF_ERROR(inner.region(op.regions.back(), depth + 1));
        }
        if (!nested.done()) return nested.error(str_cat("the regions' section (from byte ", start, ") has bytes left over"));
      } else {
        for (uint64_t r = 0; r < regions; ++r) {
          op.regions.emplace_back();
          INSITU_RETURN_IF_ERROR(this->region(op.regions.back(), depth + 1));
        }
      }
    }
    return ok_status();
  }

 public:
  Status region(Region& region, int depth) {
    INSITU_ASSIGN_OR_RETURN(uint64_t blocks, reader_.count());
    if (blocks == 0) return ok_status();
    const uint64_t at = reader_.offset();
    INSITU_ASSIGN_OR_RETURN(uint64_t declared, reader_.varint());
    uint64_t values = 0;
    for (uint64_t b = 0; b < blocks; ++b) {
      region.blocks.emplace_back();
      INSITU_RETURN_IF_ERROR(this->block(region.blocks.back(), depth, values));
    }
    if (values != declared) {
      Reader at_count(file_.bytes.subspan(at), at);
      return at_count.error(str_cat("the region declares ", declared, " values but defines ", values));
    }
    return ok_status();
  }

 private:
  File& file_;
  Reader& reader_;
};

// Resolves operands' value numbers to their definitions, walking the tree in the writer's
// numbering order (bytecode.h).
class Resolver {
 public:
  explicit Resolver(const File& file) : file_(file) {}

  Status block_list(std::span<Block> blocks, std::vector<ValueRef>& values) {
    const size_t base = values.size();
    for (Block& block : blocks) {
      for (uint64_t i = 0; i < block.argument_types.size(); ++i) values.push_back(ValueRef{nullptr, i, &block});
      for (const Operation& op : block.operations)
        for (uint64_t r = 0; r < op.result_types.size(); ++r) values.push_back(ValueRef{&op, r, nullptr});
    }
    for (Block& block : blocks) {
      for (Operation& op : block.operations) {
        for (ValueRef& operand : op.operands) {
          if (operand.index >= values.size()) {
            Reader at(file_.bytes.subspan(op.offset), op.offset);
            return at.error(str_cat(operation_name(file_, op), " reads value ", operand.index, ", of ", values.size(),
                                    " defined where it is"));
          }
          operand = values[operand.index];
        }
        for (Region& region : op.regions) {
          if (op.isolated) {
            std::vector<ValueRef> scope;
            INSITU_RETURN_IF_ERROR(block_list(region.blocks, scope));
          } else {
            INSITU_RETURN_IF_ERROR(block_list(region.blocks, values));
          }
        }
      }
    }
    values.resize(base);
    return ok_status();
  }

 private:
  const File& file_;
};

}  // namespace

StatusOr<uint8_t> Reader::byte() {
  if (position_ >= bytes_.size()) return error("unexpected end of the data");
  return bytes_[position_++];
}

StatusOr<uint64_t> Reader::varint() {
  const uint64_t start = offset();
  if (position_ >= bytes_.size()) return error("unexpected end of the data (a varint)");
  const uint8_t first = bytes_[position_];
  if (first & 1) {
    ++position_;
    return uint64_t{first} >> 1;
  }
  // the trailing zero bits of the first byte say how many more bytes follow; 0x00: eight
  const int extra = first == 0 ? 8 : std::countr_zero(first);
  if (position_ + 1 + extra > bytes_.size())
    return Reader(bytes_, base_).error(str_cat("a varint at byte ", start, " runs past the end of the data"));
  uint64_t value = 0;
  if (first == 0) {
    for (int i = 0; i < 8; ++i) value |= uint64_t{bytes_[position_ + 1 + i]} << (8 * i);
  } else {
    for (int i = 0; i <= extra; ++i) value |= uint64_t{bytes_[position_ + i]} << (8 * i);
    value >>= extra + 1;
  }
  position_ += 1 + extra;
  return value;
}

StatusOr<int64_t> Reader::signed_varint() {
  INSITU_ASSIGN_OR_RETURN(uint64_t value, varint());
  return static_cast<int64_t>((value >> 1) ^ (~(value & 1) + 1));
}

StatusOr<std::span<const uint8_t>> Reader::bytes(uint64_t count) {
  if (count > left()) return error(str_cat(count, " bytes wanted, ", left(), " left"));
  std::span<const uint8_t> span = bytes_.subspan(position_, count);
  position_ += count;
  return span;
}

StatusOr<std::span<const uint8_t>> Reader::blob() {
  INSITU_ASSIGN_OR_RETURN(uint64_t size, varint());
  return bytes(size);
}

StatusOr<std::string> Reader::c_string() {
  const auto end = std::find(bytes_.begin() + position_, bytes_.end(), uint8_t{0});
  if (end == bytes_.end()) return error("a string without its terminating NUL");
  std::string text(bytes_.begin() + position_, end);
  position_ = end - bytes_.begin() + 1;
  return text;
}

StatusOr<uint64_t> Reader::count(uint64_t min_bytes) {
  INSITU_ASSIGN_OR_RETURN(uint64_t n, varint());
  if (min_bytes > 0 && n > left() / min_bytes) return error(str_cat("a count of ", n, " with ", left(), " bytes left"));
  return n;
}

Status Reader::error(std::string message) const {
  return invalid_argument(str_cat("byte ", offset(), ": ", message));
}

bool is_bytecode(std::span<const uint8_t> bytes) {
  return bytes.size() >= 4 && std::equal(std::begin(kMagic), std::end(kMagic), bytes.begin());
}

Status located(const File& file, uint64_t offset, std::string message) {
  if (file.text.empty()) return invalid_argument(str_cat("byte ", offset, ": ", message));
  int line = 1, column = 1;
  for (size_t i = 0; i < offset && i < file.text.size(); ++i) {
    if (file.text[i] == '\n') ++line, column = 1;
    else ++column;
  }
  return invalid_argument(std::move(message), SourceLocation{line, column});
}

std::string operation_name(const File& file, const Operation& operation) {
  const OperationName& name = file.operation_names.at(operation.name);
  return str_cat(file.dialects.at(name.dialect).name, ".", name.name);
}

StatusOr<File> read_file(std::span<const uint8_t> bytes) {
  File file;
  file.bytes = bytes;
  if (!is_bytecode(bytes)) return invalid_argument("byte 0: not MLIR bytecode (no \"ML\\xefR\" magic)");
  Reader reader(bytes.subspan(4), 4);
  INSITU_ASSIGN_OR_RETURN(file.version, reader.varint());
  if (file.version != kVersion)
    return reader.error(str_cat("MLIR bytecode version ", file.version, " is not read (insitu reads version ", kVersion,
                                ", what StableHLO 0.15 and later write)"));
  INSITU_ASSIGN_OR_RETURN(file.producer, reader.c_string());

  // The sections, each once.
  SectionSpan sections[kSectionCount];
  while (!reader.done()) {
    const uint64_t start = reader.offset();
    INSITU_ASSIGN_OR_RETURN(uint8_t id_and_aligned, reader.byte());
    const uint8_t id = id_and_aligned & 0x7F;
    INSITU_ASSIGN_OR_RETURN(uint64_t length, reader.varint());
    if (id_and_aligned & 0x80) {
      INSITU_ASSIGN_OR_RETURN(uint64_t alignment, reader.varint());
      if (alignment == 0 || !std::has_single_bit(alignment) || alignment > 4096)
        return reader.error(str_cat("section alignment ", alignment, " is not a power of two up to 4096"));
      while (reader.offset() % alignment != 0) {
        INSITU_ASSIGN_OR_RETURN(uint8_t padding, reader.byte());
        if (padding != 0xCB) return reader.error("section padding that is not 0xCB");
      }
    }
    if (id >= kSectionCount) return Reader(bytes.subspan(start), start).error(str_cat("unknown section kind ", int{id}));
    if (sections[id].present) return Reader(bytes.subspan(start), start).error(str_cat("section kind ", int{id}, " twice"));
    const uint64_t offset = reader.offset();
    INSITU_ASSIGN_OR_RETURN(std::span<const uint8_t> data, reader.bytes(length));
    sections[id] = SectionSpan{data, offset, true};
  }
  for (uint8_t id : {kString, kDialect, kAttrType, kAttrTypeOffset, kIR})
    if (!sections[id].present) return reader.error(str_cat("the file has no section of kind ", int{id}));

  {  // strings: the count, the sizes (NUL included) last string first, then the characters
    Reader strings(sections[kString].bytes, sections[kString].offset);
    INSITU_ASSIGN_OR_RETURN(uint64_t count, strings.count());
    std::vector<uint64_t> sizes(count);
    for (uint64_t i = 0; i < count; ++i) {
      INSITU_ASSIGN_OR_RETURN(sizes[count - 1 - i], strings.varint());
    }
    for (uint64_t size : sizes) {
      if (size == 0) return strings.error("a string of size 0 (the size counts its NUL)");
      INSITU_ASSIGN_OR_RETURN(std::span<const uint8_t> text, strings.bytes(size));
      if (text.back() != 0) return strings.error("a string without its terminating NUL");
      file.strings.emplace_back(text.begin(), text.end() - 1);
    }
    if (!strings.done()) return strings.error("bytes left over after the strings");
  }
  auto string_at = [&](Reader& at, uint64_t index) -> StatusOr<std::string> {
    if (index >= file.strings.size())
      return at.error(str_cat("string index ", index, " out of range (", file.strings.size(), " strings)"));
    return file.strings[index];
  };

  {  // dialects (name << 1 | has version, each version a nested section of kind 7 right after
     // its name), then op names grouped by dialect
    Reader dialects(sections[kDialect].bytes, sections[kDialect].offset);
    INSITU_ASSIGN_OR_RETURN(uint64_t count, dialects.count());
    for (uint64_t i = 0; i < count; ++i) {
      INSITU_ASSIGN_OR_RETURN(uint64_t name, dialects.varint());
      Dialect dialect;
      INSITU_ASSIGN_OR_RETURN(dialect.name, string_at(dialects, name >> 1));
      if (name & 1) {
        INSITU_ASSIGN_OR_RETURN(uint8_t id, dialects.byte());
        if ((id & 0x7F) != kDialectVersions || (id & 0x80) != 0)
          return dialects.error(str_cat("dialect ", dialect.name, "'s version is not a version section"));
        INSITU_ASSIGN_OR_RETURN(dialect.version, dialects.blob());
      }
      file.dialects.push_back(std::move(dialect));
    }
    INSITU_ASSIGN_OR_RETURN(uint64_t names, dialects.count());
    while (file.operation_names.size() < names) {
      INSITU_ASSIGN_OR_RETURN(uint64_t dialect, dialects.varint());
      if (dialect >= file.dialects.size()) return dialects.error(str_cat("dialect index ", dialect, " out of range"));
      INSITU_ASSIGN_OR_RETURN(uint64_t in_group, dialects.count());
      for (uint64_t i = 0; i < in_group; ++i) {
        INSITU_ASSIGN_OR_RETURN(uint64_t name, dialects.varint());
        INSITU_ASSIGN_OR_RETURN(std::string text, string_at(dialects, name >> 1));
        file.operation_names.push_back(OperationName{dialect, std::move(text), (name & 1) != 0});
      }
    }
    if (file.operation_names.size() != names || !dialects.done())
      return dialects.error(str_cat("the op names do not add up to the ", names, " declared"));
  }

  {  // attribute and type entries: sizes grouped by dialect in the offsets section, bytes in order
    Reader offsets(sections[kAttrTypeOffset].bytes, sections[kAttrTypeOffset].offset);
    INSITU_ASSIGN_OR_RETURN(uint64_t attributes, offsets.count());
    INSITU_ASSIGN_OR_RETURN(uint64_t types, offsets.count());
    const std::span<const uint8_t> data = sections[kAttrType].bytes;
    uint64_t at = 0;
    auto entries = [&](uint64_t total, std::vector<Entry>& out) -> Status {
      while (out.size() < total) {
        INSITU_ASSIGN_OR_RETURN(uint64_t dialect, offsets.varint());
        if (dialect >= file.dialects.size()) return offsets.error(str_cat("dialect index ", dialect, " out of range"));
        INSITU_ASSIGN_OR_RETURN(uint64_t in_group, offsets.count());
        for (uint64_t i = 0; i < in_group; ++i) {
          INSITU_ASSIGN_OR_RETURN(uint64_t size_and_flag, offsets.varint());
          const uint64_t size = size_and_flag >> 1;
          if (size > data.size() - at)
            return offsets.error(str_cat("an entry of ", size, " bytes past the attribute/type section's end"));
          out.push_back(Entry{dialect, data.subspan(at, size), (size_and_flag & 1) != 0, sections[kAttrType].offset + at});
          at += size;
        }
      }
      if (out.size() != total) return offsets.error("the entries do not add up to the count declared");
      return ok_status();
    };
    INSITU_RETURN_IF_ERROR(entries(attributes, file.attributes));
    INSITU_RETURN_IF_ERROR(entries(types, file.types));
    if (at != data.size() || !offsets.done())
      return offsets.error("the attribute/type entries do not cover their section exactly");
  }

  if (sections[kProperties].present) {
    Reader properties(sections[kProperties].bytes, sections[kProperties].offset);
    INSITU_ASSIGN_OR_RETURN(uint64_t count, properties.count());
    for (uint64_t i = 0; i < count; ++i) {
      INSITU_ASSIGN_OR_RETURN(uint64_t size, properties.varint());
      file.property_offsets.push_back(properties.offset());
      INSITU_ASSIGN_OR_RETURN(std::span<const uint8_t> blob, properties.bytes(size));
      file.properties.push_back(blob);
    }
    if (!properties.done()) return properties.error("bytes left over after the properties");
  }

  {  // the IR: one block of top-level operations
    Reader ir(sections[kIR].bytes, sections[kIR].offset);
    IrReader reader_ir(file, ir);
    uint64_t values = 0;
    INSITU_RETURN_IF_ERROR(reader_ir.block(file.top, 0, values));
    if (!ir.done()) return ir.error("bytes left over after the top-level operations");
    // (the File moves on return: nothing may point at its top block itself)
    if (!file.top.argument_types.empty()) return ir.error("top-level operations with block arguments");
    std::vector<ValueRef> scope;
    INSITU_RETURN_IF_ERROR(Resolver(file).block_list(std::span<Block>(&file.top, 1), scope));
  }
  return file;
}

}  // namespace insitu::bytecode
