// The StableHLO text reader's parts (text.h): text_parser.cc reads MLIR's syntax (types,
// attributes, the generic op form, regions, functions and the module), text_ops.cc the
// StableHLO, CHLO and func ops' own printed forms, text_vhlo.cc turns what was read into the
// bytecode::File the VHLO importer reads. Not an API.
//
// What is read is first a tree of TextOps with named attributes, as the text spells them; the
// op's attributes then become VHLO properties (in name order, defaults filled) when the File is
// built, so the importer (import.h) sees the same ops whether the module came as bytecode or as
// text.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "insitu/stablehlo/attributes.h"
#include "insitu/stablehlo/text.h"

namespace insitu::stablehlo::text_internal {

struct TextOp;
struct TextBlock;

// A value an operand reads: an op's result or a block's argument.
struct TextValue {
  const TextOp* op = nullptr;
  const TextBlock* block = nullptr;
  uint64_t index = 0;
};

struct TextBlock {
  std::vector<uint64_t> argument_types;
  std::vector<std::unique_ptr<TextOp>> ops;
};

struct TextRegion {
  std::vector<std::unique_ptr<TextBlock>> blocks;
};

struct TextOp {
  std::string name;  // as written: "stablehlo.add", "func.func", "chlo.top_k"
  std::vector<TextValue> operands;
  std::vector<uint64_t> result_types;
  std::vector<std::pair<std::string, uint64_t>> attributes;  // name -> attribute index, in the text's order
  std::vector<TextRegion> regions;
  uint64_t offset = 0;  // where the op starts in the text
  const uint64_t* attribute(std::string_view key) const {
    for (const auto& [name, index] : attributes)
      if (name == key) return &index;
    return nullptr;
  }
};

// What the parser builds: the module op, and the tables its indices point into.
struct Parsed {
  std::unique_ptr<TextOp> module;
  std::vector<Attribute> attributes;
  std::vector<Type> types;
  std::vector<uint64_t> attribute_offsets, type_offsets;
  std::deque<std::vector<uint8_t>> storage;  // the bytes dense attributes' spans point into
};

constexpr int kMaxNesting = 64;  // regions, attributes and types inside one another

inline bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '$';
}

// Guards the depth of recursive constructs (a hostile text of 10^6 '[' stays an error).
struct Nest {
  explicit Nest(int& depth) : depth_(depth) { ++depth_; }
  ~Nest() { --depth_; }
  int& depth_;
};

// MLIR's text syntax over one module. Every error names the line and column where the text
// stops making sense.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}
  // Reads the whole text into the tree (parsed_).
  Status run();
  // The File of the tree read (text_vhlo.cc): each op its VHLO op and properties.
  StatusOr<std::unique_ptr<TextFile>> build();

  // -- the cursor (text_parser.cc) --
  Status error(std::string message) const { return error_at(position_, std::move(message)); }
  Status error_at(size_t position, std::string message) const;
  void skip_space();
  bool peek(std::string_view token);           // after space
  bool consume(std::string_view token);        // a punctuation or a word (a word must end there)
  Status expect(std::string_view token);
  std::string_view word();                     // letters, digits, '_', '.', '$', '-' (empty if none)
  StatusOr<std::string> string_literal();
  StatusOr<int64_t> integer();
  size_t position() const { return position_; }

  // -- types and attributes (text_parser.cc) --
  StatusOr<uint64_t> type();
  StatusOr<std::vector<uint64_t>> type_list_until(std::string_view close);  // after the opener
  uint64_t add_type(Type type, std::string key);
  StatusOr<uint64_t> attribute();
  uint64_t add_attribute(Attribute attribute, size_t at);
  uint64_t integer_attribute(int64_t value, PrimitiveType type, size_t at);
  uint64_t boolean_attribute(bool value, size_t at);
  uint64_t string_attribute(std::string text, size_t at);
  uint64_t enum_attribute(VhloEnum code, int64_t value, size_t at);
  uint64_t integers_attribute(const std::vector<int64_t>& values, size_t at);  // an i64 tensor
  uint64_t array_attribute(std::vector<uint64_t> elements, size_t at);
  uint64_t type_attribute(uint64_t type, size_t at);
  uint64_t none_attribute(size_t at);  // a type attribute of `none` (an unset optional field)
  uint64_t tensor_type(PrimitiveType element, std::vector<int64_t> dimensions);
  uint64_t element_type_index(PrimitiveType element);  // the type of one element (i32, f32, ...)
  const Type& type_at(uint64_t index) const { return parsed_.types[index]; }
  const Attribute& attribute_at(uint64_t index) const { return parsed_.attributes[index]; }
  StatusOr<std::vector<int64_t>> integer_list();  // [1, 2, 3]
  StatusOr<uint64_t> dictionary_attribute();       // after '{' was seen (not consumed)

  // -- ops (text_parser.cc: generic form, regions, functions; text_ops.cc: printed forms) --
  struct ResultNames {
    std::vector<std::pair<std::string, uint64_t>> names;  // name, count of results it names
    uint64_t total = 0;
  };
  StatusOr<std::unique_ptr<TextOp>> operation();
  Status generic(TextOp& op);
  Status custom(TextOp& op, const ResultNames& results);  // text_ops.cc
  Status region(TextRegion& region, const std::vector<std::pair<std::string, uint64_t>>& arguments);
  Status function(TextOp& op);
  StatusOr<TextValue> value_use();
  StatusOr<std::vector<TextValue>> value_uses();  // zero or more, comma separated
  uint64_t type_of(const TextValue& value) const;
  Status define(const std::string& name, TextValue value);
  // `: T`, `: T, U, ...` or `: (T, ...) -> R`: the op's result types (and, checked, its operands'),
  // by the op's own rule for a single type or a list
  Status trailing_types(TextOp& op, uint64_t results);
  Status attribute_dictionary(TextOp& op);  // an optional `{...}` of named attributes
  void skip_location();                     // an optional loc(...)
  // [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]: the nine fields of convolution dimension numbers
  Status convolution_dimensions(Attribute& fields);

 private:
  std::string_view text_;
  size_t position_ = 0;
  Parsed parsed_;
  std::map<std::string, uint64_t> type_keys_;
  std::map<std::string, uint64_t> aliases_;                    // #name = attribute
  std::vector<std::map<std::string, TextValue>> scopes_;       // SSA names, innermost last
  int depth_ = 0;
  StatusOr<uint64_t> element_or_tensor(std::string_view word, size_t at);
  StatusOr<uint64_t> dense(size_t at);
  StatusOr<uint64_t> hash_attribute(size_t at);
  Status struct_fields(Attribute& out, size_t at);
  StatusOr<uint64_t> number(size_t at);
  // What an optional <...> from here holds, kept as text (an attribute of another dialect).
  StatusOr<uint64_t> opaque(size_t at, std::string description);
  // text_vhlo.cc
  struct Built;
  Status convert(const TextOp& op, bytecode::Operation& out, Built& built);
  Status legalize(const TextOp& op, std::string& name, std::vector<uint64_t>& properties,
                  std::vector<std::pair<std::string, uint64_t>>& discardable);
};

// PrimitiveType of an MLIR element type name ("f32", "i1", "ui8", "bf16", "index" as s64).
std::optional<PrimitiveType> element_type(std::string_view name);

}  // namespace insitu::stablehlo::text_internal
