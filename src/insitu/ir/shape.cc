#include "insitu/ir/shape.h"

#include "insitu/support/str.h"

namespace insitu {

std::string shape_index_to_string(const ShapeIndex& index) { return "{" + str_join(index, ",") + "}"; }

Layout Layout::descending(int64_t rank) {
  Layout layout;
  for (int64_t i = rank - 1; i >= 0; --i) layout.minor_to_major.push_back(i);
  return layout;
}

bool Layout::is_default_for_rank(int64_t rank) const { return *this == descending(rank); }

std::string Layout::fields_to_string() const {
  std::string out = str_join(minor_to_major, ",");
  if (tiles.empty() && memory_space == 0 && other_fields.empty()) return out;
  out += ":";
  if (!tiles.empty()) {
    out += "T";
    for (const Tile& tile : tiles) {
      out += "(" + str_join(tile.dimensions, ",", [](int64_t d) {
               return d == kCombineDimension ? std::string("*") : std::to_string(d);
             }) + ")";
    }
  }
  // XLA orders the fields D T L # * E S SC P M; insitu keeps the unmodelled ones verbatim in
  // one string, placed after the tiles and before S(n) unless they belong after it.
  std::string after_memory_space;
  std::string before_memory_space = other_fields;
  for (const char* late : {"SC(", "P(", "M("}) {
    size_t at = before_memory_space.find(late);
    if (at != std::string::npos && (at == 0 || before_memory_space[at - 1] == ')')) {
      after_memory_space = before_memory_space.substr(at);
      before_memory_space = before_memory_space.substr(0, at);
      break;
    }
  }
  out += before_memory_space;
  if (memory_space != 0) out += "S(" + std::to_string(memory_space) + ")";
  out += after_memory_space;
  return out;
}

Shape Shape::array(PrimitiveType type, std::vector<int64_t> dimensions) {
  Layout layout = Layout::descending(static_cast<int64_t>(dimensions.size()));
  return array(type, std::move(dimensions), std::move(layout));
}

Shape Shape::array(PrimitiveType type, std::vector<int64_t> dimensions, Layout layout) {
  INSITU_CHECK(is_array_type(type)) << "Shape::array of " << primitive_type_name(type);
  Shape shape;
  shape.element_type_ = type;
  shape.dynamic_dimensions_.assign(dimensions.size(), false);
  shape.dimensions_ = std::move(dimensions);
  shape.layout_ = std::move(layout);
  return shape;
}

Shape Shape::tuple(std::vector<Shape> elements) {
  Shape shape;
  shape.element_type_ = PrimitiveType::kTuple;
  shape.tuple_shapes_ = std::move(elements);
  return shape;
}

Shape Shape::token() {
  Shape shape;
  shape.element_type_ = PrimitiveType::kToken;
  return shape;
}

bool Shape::is_dynamic() const {
  for (bool d : dynamic_dimensions_)
    if (d) return true;
  return false;
}

int64_t Shape::element_count() const {
  int64_t count = 1;
  for (int64_t d : dimensions_) count *= d;
  return count;
}

int64_t Shape::byte_size() const { return is_array() ? element_count() * byte_width(element_type_) : 0; }

const Shape* Shape::subshape(const ShapeIndex& index) const {
  const Shape* shape = this;
  for (int64_t i : index) {
    if (!shape->is_tuple() || i < 0 || i >= shape->tuple_size()) return nullptr;
    shape = &shape->tuple_shapes_[i];
  }
  return shape;
}

int64_t Shape::leaf_count() const {
  int64_t count = 0;
  for_each_leaf([&](const Shape&, const ShapeIndex&) { ++count; });
  return count;
}

bool Shape::compatible(const Shape& other) const {
  if (element_type_ != other.element_type_) return false;
  if (is_tuple()) {
    if (tuple_size() != other.tuple_size()) return false;
    for (int64_t i = 0; i < tuple_size(); ++i)
      if (!tuple_shapes_[i].compatible(other.tuple_shapes_[i])) return false;
    return true;
  }
  return dimensions_ == other.dimensions_ && buffer_ == other.buffer_;
}

std::string Shape::to_string(bool with_layout) const {
  if (is_tuple()) {
    // XLA marks every fifth element of a tuple shape: "(f32[], ..., /*index=5*/f32[])".
    std::string out = "(";
    for (int64_t i = 0; i < tuple_size(); ++i) {
      if (i > 0) out += i % 5 == 0 ? ", /*index=" + std::to_string(i) + "*/" : std::string(", ");
      out += tuple_shapes_[i].to_string(with_layout);
    }
    return out + ")";
  }
  if (is_token()) return "token[]";
  if (!is_array()) return "invalid[]";
  if (buffer_) {
    Shape array = *this;
    array.buffer_ = false;
    return "b(" + array.to_string(with_layout) + ")";
  }
  std::string out(primitive_type_name(element_type_));
  out += "[";
  for (int64_t i = 0; i < rank(); ++i) {
    if (i > 0) out += ",";
    if (dynamic_dimensions_[i]) out += "<=";
    out += std::to_string(dimensions_[i]);
  }
  out += "]";
  if (!with_layout) return out;
  // Scalars print no layout unless it carries tiles or a memory space: "f32[]{:T(256)}".
  std::string fields = layout_.fields_to_string();
  if (rank() == 0 && fields.empty()) return out;
  return out + "{" + fields + "}";
}

}  // namespace insitu
