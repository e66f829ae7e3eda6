// The attributes and types of a VHLO artifact, decoded from their bytecode entries
// (bytecode.h): the builtin dialect's (locations, the module's and ops' attribute dictionaries,
// builtin strings and integers) and VHLO's (every type, and every attribute an op carries).
// Encodings from the format's public description (mlir.llvm.org's bytecode format; StableHLO's
// VHLO dialect): each custom-encoded entry starts with its kind code.
//
// Entries are decoded on first use and kept (an artifact's entries point at each other, forward
// too). An entry of a dialect insitu does not decode (Shardy's `sdy`, a textual entry) is kept as
// kOpaque with its dialect and bytes, so a caller that needs its meaning says which entry it could
// not read; nothing is dropped silently. Errors name the entry's byte offset.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "insitu/ir/dtype.h"
#include "insitu/ir/shape.h"
#include "insitu/stablehlo/bytecode.h"

namespace insitu::stablehlo {

struct Type {
  enum class Kind { kElement, kTensor, kFunction, kTuple, kToken, kUnrankedTensor, kNone, kIndex, kOpaque };
  Kind kind = Kind::kOpaque;
  PrimitiveType element = PrimitiveType::kInvalid;  // kElement; a tensor's element type
  std::vector<int64_t> dimensions;                  // kTensor; kDynamic for a dynamic one
  std::vector<uint64_t> inputs, outputs;            // kFunction (type indices); kTuple: inputs
  std::optional<uint64_t> encoding;                 // kTensor: its encoding attribute (bounds)
  std::string description;                          // kOpaque: what it is ("sdy type", "text f8E4M3")
  static constexpr int64_t kDynamic = INT64_MIN;
};

struct Attribute {
  enum class Kind {
    kArray,        // elements
    kDictionary,   // elements: key, value, key, value, ...
    kString,       // text
    kBoolean,      // integer 0/1
    kInteger,      // type, integer (sign-extended from the type's width when signed)
    kFloat,        // type, bits (the value's bit pattern, width of the type)
    kTensor,       // type, data (dense elements; a splat holds one element)
    kType,         // type
    kEnum,         // code (which VHLO enum attribute), integer (its value)
    kOutputOperandAlias,  // output_index, operand (integer), operand_index
    kTypeExtensions,      // bounds (in output_index)
    kResultAccuracy,      // bits: atol's, output_index: {rtol's bits, ulps}, elements: {mode attribute}
    kUnit,
    kSymbolRef,    // text (the root symbol)
    kLocation,     // text (a file name or a name, where the location has one), integer (line)
    kOpaque,       // description: a dialect or kind not decoded
  };
  Kind kind = Kind::kOpaque;
  std::vector<uint64_t> elements;
  std::string text;
  int64_t integer = 0;
  uint64_t bits = 0;
  uint64_t type = 0;
  uint64_t code = 0;
  std::vector<int64_t> output_index, operand_index;
  std::span<const uint8_t> data;
  std::string description;
};

// VHLO's enum attribute codes (Attribute::code of a kEnum).
enum VhloEnum : uint64_t {
  kComparisonDirection = 3,
  kComparisonType = 4,
  kCustomCallApiVersion = 5,
  kFftType = 7,
  kPrecision = 11,
  kRngAlgorithm = 12,
  kRngDistribution = 13,
  kTranspose = 16,
  kResultAccuracyMode = 19,
};

// The booleans of a dense i1 tensor's data as MLIR writes them: a splat byte (0x00 or 0xFF),
// bits packed least significant first ((count + 7) / 8 bytes), or one byte each; empty when the
// data fits none of these.
std::vector<bool> unpack_booleans(std::span<const uint8_t> data, int64_t count);

class Symbols {
 public:
  explicit Symbols(const bytecode::File& file);
  // A File read from text (text.h): its attributes and types are given decoded, one per entry.
  Symbols(const bytecode::File& file, const std::vector<Attribute>& attributes, const std::vector<Type>& types);
  StatusOr<const Attribute*> attribute(uint64_t index);
  StatusOr<const Type*> type(uint64_t index);
  // "file:line" of a location attribute (through call sites, names and fused locations: the
  // first part that has a file), or "" when it has none.
  std::string source_location(uint64_t index, int depth = 0);
  // Shorthands that check the kind: "what" names the use in the error.
  StatusOr<std::string> string(uint64_t index, std::string_view what);
  StatusOr<int64_t> integer(uint64_t index, std::string_view what);      // kInteger, kBoolean, kEnum
  // The elements of an i64/i32 tensor (any rank, row-major; a splat expanded), of a boolean
  // tensor (0/1), or of an array of integers.
  StatusOr<std::vector<int64_t>> integers(uint64_t index, std::string_view what);
  // Entries nest at most this deep (tuples of tuples, a type naming a type, ...).
  static constexpr int kMaxDepth = 64;
  // Elements a tensor type may have (a constant's bytes are capped by the parser too).
  static constexpr int64_t kMaxElements = int64_t{1} << 36;
  // A type as insitu's element type and dimensions (a ranked tensor, or a token/tuple).
  StatusOr<Shape> shape(uint64_t type_index, std::string_view what, int depth = 0);
  const bytecode::File& file() const { return file_; }
  // "byte N: message" for the entry `index` (attribute or type).
  Status attribute_error(uint64_t index, std::string message) const;
  Status type_error(uint64_t index, std::string message) const;

 private:
  StatusOr<Attribute> decode_attribute(uint64_t index);
  StatusOr<Type> decode_type(uint64_t index);
  const bytecode::File& file_;
  std::vector<std::unique_ptr<Attribute>> attributes_;
  std::vector<std::unique_ptr<Type>> types_;
  std::vector<bool> attribute_busy_, type_busy_;  // cycle guard for hostile files
  int depth_ = 0;  // entries being decoded inside one another (a chain in a hostile file)
};

}  // namespace insitu::stablehlo
