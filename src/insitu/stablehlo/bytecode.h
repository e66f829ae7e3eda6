// The MLIR bytecode container (mlir.llvm.org/docs/BytecodeFormat), read without MLIR: the
// first half of reading StableHLO (issue 37). JAX hands a PJRT plugin a VHLO portable artifact
// in this format ("ML\xefR", version 6, producer "StableHLO_v1.22.0"); jax.export writes one too.
//
// This layer knows the container only: the string table, the dialects and op names, the
// attribute and type tables (each entry's bytes, not yet decoded: that is the dialect's job,
// attributes.h), the properties blobs, and the IR as a tree of operations, regions and blocks
// with operands as value numbers resolved to their definitions. Nothing here knows an op's
// meaning.
//
// Errors name the byte offset where the input stops making sense ("byte 419: ...") and what
// was expected; a truncated, corrupted or hostile file is an error, never a crash or an
// allocation the file's size does not justify (every count is checked against the bytes left
// before anything is reserved).
//
// Value numbering follows the writer: each region numbers its block arguments and op results
// in order, starting where its parent region's own values end (sibling regions reuse the same
// numbers); a region isolated from above starts at 0.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "insitu/support/status.h"

namespace insitu::bytecode {

// One attribute or type entry: the bytes of its encoding, and whether the dialect encoded it
// itself (custom) or wrote its textual assembly form.
struct Entry {
  uint64_t dialect = 0;  // into File::dialects
  std::span<const uint8_t> bytes;
  bool custom = false;
  uint64_t offset = 0;  // of the bytes in the file, for errors
};

struct Dialect {
  std::string name;
  std::optional<std::span<const uint8_t>> version;  // the dialect's version blob, when written
};

struct OperationName {
  uint64_t dialect = 0;
  std::string name;  // without the dialect: "add_v1"
  bool registered = true;
};

struct Operation;

// A value an operand reads: the block argument or op result it names.
struct ValueRef {
  const Operation* operation = nullptr;  // the defining op, or nullptr for a block argument
  uint64_t index = 0;                    // the result number, or the argument number
  const struct Block* block = nullptr;   // the block, for a block argument
};

struct Block {
  std::vector<uint64_t> argument_types;      // type indices
  std::vector<uint64_t> argument_locations;  // location attribute indices (0 when not written)
  std::vector<Operation> operations;
};

struct Region {
  std::vector<Block> blocks;
};

struct Operation {
  uint64_t name = 0;                      // into File::operation_names
  uint64_t location = 0;                  // attribute index
  std::optional<uint64_t> attributes;     // attribute index of the discardable attributes' dictionary
  std::optional<uint64_t> properties;     // into File::properties
  std::vector<uint64_t> result_types;     // type indices
  std::vector<ValueRef> operands;
  std::vector<uint64_t> successors;       // block numbers in the enclosing region
  std::vector<Region> regions;
  bool isolated = false;                  // regions isolated from above
  uint64_t offset = 0;                    // where the op starts in the file
};

// Not copyable: operands point at operations and blocks inside it (moving keeps them).
struct File {
  File() = default;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  File(File&&) = default;
  File& operator=(File&&) = default;
  uint64_t version = 0;
  std::string producer;
  std::vector<std::string> strings;
  std::vector<Dialect> dialects;
  std::vector<OperationName> operation_names;
  std::vector<Entry> attributes;
  std::vector<Entry> types;
  std::vector<std::span<const uint8_t>> properties;
  std::vector<uint64_t> property_offsets;
  Block top;  // the top-level operations (one builtin.module)
  std::span<const uint8_t> bytes;  // the whole input, which the spans above point into
  // When the File was read from StableHLO text (text.h): that text, and every offset above is a
  // character offset into it (errors then name a line and column, not a byte).
  std::string_view text;
};

// An error at `offset` of the file: "byte N: message", or for a File read from text the message
// with the text's line and column as its location.
Status located(const File& file, uint64_t offset, std::string message);

// Whether `bytes` starts with the bytecode magic "ML\xefR".
bool is_bytecode(std::span<const uint8_t> bytes);

// Reads the container. `bytes` must outlive the File (the entries point into it).
StatusOr<File> read_file(std::span<const uint8_t> bytes);

// The full name of an operation: "vhlo.add_v1".
std::string operation_name(const File& file, const Operation& operation);

// A reader of the primitives (PrefixVarInt, signed varints, blobs), for the dialect decoders.
// Every read checks the bytes left; an error names the absolute byte offset.
class Reader {
 public:
  Reader(std::span<const uint8_t> bytes, uint64_t base) : bytes_(bytes), base_(base) {}
  uint64_t offset() const { return base_ + position_; }
  bool done() const { return position_ >= bytes_.size(); }
  size_t left() const { return bytes_.size() - position_; }
  StatusOr<uint8_t> byte();
  StatusOr<uint64_t> varint();
  StatusOr<int64_t> signed_varint();  // zigzag
  StatusOr<std::span<const uint8_t>> bytes(uint64_t count);
  StatusOr<std::span<const uint8_t>> blob();  // a varint size, then that many bytes
  StatusOr<std::string> c_string();           // up to a NUL
  // A varint count of items each at least `min_bytes` long: an error when the bytes left
  // cannot hold that many (so no count from a corrupt file reserves memory it cannot fill).
  StatusOr<uint64_t> count(uint64_t min_bytes = 1);
  Status error(std::string message) const;

 private:
  std::span<const uint8_t> bytes_;
  uint64_t base_ = 0;
  size_t position_ = 0;
};

}  // namespace insitu::bytecode
