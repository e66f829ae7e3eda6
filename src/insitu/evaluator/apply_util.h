// Helpers for the evaluator ops that call a to_apply computation once per element (reduce,
// reduce-window, scatter, sort): moving single elements between arrays and scalar Literals,
// and checking what the computation returned. Element copies are byte copies, so one code path
// serves every element type.
#pragma once

#include <algorithm>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "insitu/ir/computation.h"
#include "insitu/ir/instruction.h"
#include "insitu/support/str.h"

namespace insitu::eval {

// "OPCODE %name: message" at the instruction's location.
inline Status bad_instruction(const Instruction& instruction, std::string_view message) {
  return invalid_argument(str_cat(opcode_name(instruction.opcode()), " %", instruction.name(), ": ", message),
                          instruction.location());
}

// An attribute the parser kept verbatim for the opcode's own function (attribute_table.h's
// kOwn), or nullptr when the instruction does not have it.
inline const RawAttribute* find_own_attribute(const Instruction& instruction, std::string_view key) {
  for (const RawAttribute& attribute : instruction.extra_attributes)
    if (attribute.key == key) return &attribute;
  return nullptr;
}

// A boolean own attribute: `otherwise` when absent, a located error unless true or false.
inline StatusOr<bool> own_bool_attribute(const Instruction& instruction, std::string_view key, bool otherwise) {
  const RawAttribute* attribute = find_own_attribute(instruction, key);
  if (attribute == nullptr) return otherwise;
  if (attribute->value == "true") return true;
  if (attribute->value == "false") return false;
  return bad_instruction(instruction, str_cat(key, "=", attribute->value, " must be true or false"));
}

// Element i of an f32 or f64 array's bytes as a double, and back (rounded once for f32): the
// linear-algebra and fft routines compute in double.
inline double load_double(PrimitiveType type, const uint8_t* base, int64_t i) {
  if (type == PrimitiveType::kF32) {
    float value;
    std::memcpy(&value, base + i * 4, 4);
    return value;
  }
  double value;
  std::memcpy(&value, base + i * 8, 8);
  return value;
}

inline void store_double(PrimitiveType type, uint8_t* base, int64_t i, double value) {
  if (type == PrimitiveType::kF32) {
    const float narrow = static_cast<float>(value);
    std::memcpy(base + i * 4, &narrow, 4);
  } else {
    std::memcpy(base + i * 8, &value, 8);
  }
}

// The `count` array leaves of a variadic result (the result itself when count == 1, else its
// tuple elements), each checked to have its operand's shape.
inline StatusOr<std::vector<Literal*>> variadic_result_leaves(const Instruction& instruction, Literal& result,
                                                              std::span<const Literal* const> operands,
                                                              size_t count) {
  std::vector<Literal*> leaves;
  if (count == 1 && result.shape().is_array()) {
    leaves.push_back(&result);
  } else if (count > 1 && result.shape().is_tuple() && result.elements().size() == count) {
    for (Literal& element : result.elements()) leaves.push_back(&element);
  }
  bool shape_ok = leaves.size() == count;
  for (size_t i = 0; shape_ok && i < count; ++i)
    shape_ok = leaves[i]->shape().is_array() && leaves[i]->shape().compatible(operands[i]->shape());
  if (!shape_ok)
    return bad_instruction(instruction,
                           str_cat("shape ", instruction.shape().to_string(false), " must be the operand shape(s)"));
  return leaves;
}

// The scalar at row-major position `linear` of an array literal.
inline Literal scalar_at(const Literal& array, int64_t linear) {
  const PrimitiveType type = array.shape().element_type();
  Literal scalar(Shape::scalar(type));
  const int64_t width = byte_width(type);
  std::memcpy(scalar.untyped_data(), array.untyped_data() + linear * width, static_cast<size_t>(width));
  return scalar;
}

// Writes a scalar literal (of the array's element type) at row-major position `linear`.
inline void store_scalar(Literal& array, int64_t linear, const Literal& scalar) {
  const int64_t width = byte_width(array.shape().element_type());
  INSITU_CHECK(scalar.shape().element_type() == array.shape().element_type() && scalar.shape().rank() == 0)
      << "storing " << scalar.shape().to_string() << " into " << array.shape().to_string();
  std::memcpy(array.untyped_data() + linear * width, scalar.untyped_data(), static_cast<size_t>(width));
}

// The instruction's to_apply computation, or an error when it has none.
inline StatusOr<const Computation*> find_to_apply(const Instruction& instruction) {
  if (instruction.called_computations().empty() || instruction.to_apply() == nullptr) {
    return invalid_argument(str_cat(opcode_name(instruction.opcode()), " %", instruction.name(),
                                    " has no to_apply computation: give it one (to_apply=%name)"),
                            instruction.location());
  }
  return instruction.to_apply();
}

// Splits what a to_apply computation returned into its scalars: a scalar when `types` has one
// entry, else a tuple of scalars. Each must have the matching element type.
inline StatusOr<std::vector<const Literal*>> unpack_scalars(const Literal& result,
                                                            const std::vector<PrimitiveType>& types,
                                                            const Instruction& instruction) {
  std::vector<const Literal*> scalars;
  if (types.size() == 1 && !result.shape().is_tuple()) {
    scalars.push_back(&result);
  } else if (result.shape().is_tuple() && result.elements().size() == types.size()) {
    for (const Literal& element : result.elements()) scalars.push_back(&element);
  }
  bool ok = scalars.size() == types.size();
  for (size_t i = 0; ok && i < scalars.size(); ++i)
    ok = scalars[i]->shape().is_array() && scalars[i]->shape().rank() == 0 &&
         scalars[i]->shape().element_type() == types[i];
  if (!ok) {
    return invalid_argument(str_cat(opcode_name(instruction.opcode()), " %", instruction.name(), ": to_apply returned ",
                                    result.shape().to_string(false), " but ", types.size(),
                                    " scalar(s) of the operands' element types are needed"),
                            instruction.location());
  }
  return scalars;
}

// The order in which XLA's evaluator walks an array's index space: the array's layout, minor
// dimension fastest (row-major for the default layout). Falls back to row-major when the
// shape's minor_to_major is not a permutation of its dimensions.
inline std::vector<int64_t> iteration_minor_to_major(const Shape& shape) {
  const std::vector<int64_t>& layout = shape.layout().minor_to_major;
  std::vector<int64_t> sorted = layout;
  std::sort(sorted.begin(), sorted.end());
  bool permutation = static_cast<int64_t>(sorted.size()) == shape.rank();
  for (size_t i = 0; permutation && i < sorted.size(); ++i) permutation = sorted[i] == static_cast<int64_t>(i);
  if (permutation) return layout;
  std::vector<int64_t> descending(static_cast<size_t>(shape.rank()));
  for (int64_t i = 0; i < shape.rank(); ++i) descending[i] = shape.rank() - 1 - i;
  return descending;
}

// Calls fn(index) for every multi-index of `dimensions` whose dimension d ranges over
// [0, dimensions[d]) when active[d], and stays 0 otherwise; the active dimensions advance in
// `minor_to_major` order (first listed fastest). Nothing is called if an active dimension is 0.
// fn returns a Status; the first error stops the walk and is returned.
template <typename Fn>
Status for_each_index_in_order(std::span<const int64_t> dimensions, const std::vector<bool>& active,
                             std::span<const int64_t> minor_to_major, Fn&& fn) {
  for (size_t d = 0; d < dimensions.size(); ++d)
    if (active[d] && dimensions[d] == 0) return ok_status();
  std::vector<int64_t> index(dimensions.size(), 0);
  while (true) {
    INSITU_RETURN_IF_ERROR(fn(std::span<const int64_t>(index)));
    size_t position = 0;
    for (; position < minor_to_major.size(); ++position) {
      const int64_t d = minor_to_major[position];
      if (!active[d]) continue;
      if (++index[d] < dimensions[d]) break;
      index[d] = 0;
    }
    if (position == minor_to_major.size()) return ok_status();
  }
}

}  // namespace insitu::eval
