// Shapes and layouts as XLA's HLO has them.
//
//   f32[8,128]{1,0:T(8,128)S(1)}   array: element type, dimensions, layout
//   (s32[4]{0}, f32[])             tuple
//   token[]                        token
//   b(f32[16])                     buffer: an array that is never copied (XLA's non-copyable
//                                  buffers, made and ended by its Pin/Unpin custom calls); an
//                                  array in every other respect here, and copy insertion refuses
//                                  to copy one
//
// A layout lists dimensions minor-to-major, then optional tiles T(..)(..) and a memory space
// S(n). Every array shape has a layout: the parser gives shapes written without one the default
// (descending minor_to_major), as XLA's parser does. Byte sizes are dense: tiles do not pad
// (XLA:CPU semantics). Layout fields insitu does not model (D(..), L(n), #(..), *(..), E(n),
// SC(..), P(..), M(n)) are kept verbatim in `other_fields` so they round-trip.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "insitu/ir/dtype.h"

namespace insitu {

// A path into a (possibly nested) tuple shape: {} is the whole value, {1,0} is element 0 of
// element 1.
using ShapeIndex = std::vector<int64_t>;
std::string shape_index_to_string(const ShapeIndex& index);  // "{1,0}"

// In a tile, XLA's "*" (combine dimensions) is stored as kCombineDimension.
inline constexpr int64_t kCombineDimension = INT64_MIN;

struct Tile {
  std::vector<int64_t> dimensions;
  bool operator==(const Tile&) const = default;
};

struct Layout {
  std::vector<int64_t> minor_to_major;
  std::vector<Tile> tiles;
  int64_t memory_space = 0;    // S(n); 0 is the default memory space
  std::string other_fields;    // unmodelled layout fields, verbatim, e.g. "E(4)"
  bool operator==(const Layout&) const = default;

  static Layout descending(int64_t rank);  // {rank-1, ..., 0}
  // "0:T(128)S(3)" (without braces); empty string for a plain scalar layout.
  std::string fields_to_string() const;
  bool is_default_for_rank(int64_t rank) const;
};

class Shape {
 public:
  Shape() = default;
  // An array with the default layout.
  static Shape array(PrimitiveType type, std::vector<int64_t> dimensions);
  static Shape array(PrimitiveType type, std::vector<int64_t> dimensions, Layout layout);
  static Shape scalar(PrimitiveType type) { return array(type, {}); }
  static Shape tuple(std::vector<Shape> elements);
  static Shape token();

  PrimitiveType element_type() const { return element_type_; }
  bool is_array() const { return is_array_type(element_type_); }
  bool is_tuple() const { return element_type_ == PrimitiveType::kTuple; }
  bool is_token() const { return element_type_ == PrimitiveType::kToken; }
  // b(...): an array value that must never be copied (see the file comment).
  bool is_buffer() const { return buffer_; }
  void set_buffer(bool buffer) { buffer_ = buffer; }

  // Array accessors.
  const std::vector<int64_t>& dimensions() const { return dimensions_; }
  int64_t dimension(int64_t i) const { return dimensions_.at(i); }
  int64_t rank() const { return static_cast<int64_t>(dimensions_.size()); }
  // Bounded-dynamic dimensions ("<=8"); all false for static shapes.
  const std::vector<bool>& dynamic_dimensions() const { return dynamic_dimensions_; }
  void set_dynamic_dimension(int64_t i, bool dynamic) { dynamic_dimensions_.at(i) = dynamic; }
  bool is_dynamic() const;
  const Layout& layout() const { return layout_; }
  Layout& mutable_layout() { return layout_; }
  void set_layout(Layout layout) { layout_ = std::move(layout); }
  int64_t element_count() const;  // product of dimensions (1 for a scalar)
  int64_t byte_size() const;      // dense bytes of an array; 0 for tuple/token

  // Tuple accessors.
  const std::vector<Shape>& tuple_shapes() const { return tuple_shapes_; }
  std::vector<Shape>& mutable_tuple_shapes() { return tuple_shapes_; }
  int64_t tuple_size() const { return static_cast<int64_t>(tuple_shapes_.size()); }
  const Shape& tuple_shape(int64_t i) const { return tuple_shapes_.at(i); }

  // The subshape at `index`; nullptr when the index does not exist.
  const Shape* subshape(const ShapeIndex& index) const;
  // Calls fn(subshape, index) for every leaf (array or token) in depth-first order.
  template <typename Fn>
  void for_each_leaf(Fn&& fn) const {
    ShapeIndex index;
    for_each_leaf_impl(fn, index);
  }
  int64_t leaf_count() const;

  // Same element types and dimensions (tuples: recursively), ignoring layouts.
  bool compatible(const Shape& other) const;
  // Exact equality, layouts included.
  bool operator==(const Shape& other) const = default;

  // XLA text: "f32[2,3]{1,0}". with_layout=false drops layouts ("f32[2,3]").
  std::string to_string(bool with_layout = true) const;

 private:
  template <typename Fn>
  void for_each_leaf_impl(Fn& fn, ShapeIndex& index) const {
    if (!is_tuple()) {
      fn(*this, static_cast<const ShapeIndex&>(index));
      return;
    }
    for (int64_t i = 0; i < tuple_size(); ++i) {
      index.push_back(i);
      tuple_shapes_[i].for_each_leaf_impl(fn, index);
      index.pop_back();
    }
  }

  PrimitiveType element_type_ = PrimitiveType::kInvalid;
  std::vector<int64_t> dimensions_;
  std::vector<bool> dynamic_dimensions_;
  Layout layout_;
  std::vector<Shape> tuple_shapes_;
  bool buffer_ = false;
};

}  // namespace insitu
