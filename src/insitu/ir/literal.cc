#include "insitu/ir/literal.h"

#include <sys/mman.h>

namespace insitu {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}  // namespace

void* Literal::allocate_zeroed(size_t bytes) {
  if (bytes < kHugePage) {
    void* memory = std::calloc(bytes == 0 ? 1 : bytes, 1);
    if (memory == nullptr) throw std::bad_alloc();
    return memory;
  }
  // a mapping of whole huge pages, aligned to one: map one page more, trim the slack
  const size_t size = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* mapped = ::mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<uintptr_t>(mapped);
  const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) ::munmap(mapped, aligned - start);
  if (const uintptr_t end = start + size + kHugePage; end > aligned + size)
    ::munmap(reinterpret_cast<void*>(aligned + size), end - (aligned + size));
  ::madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);  // advice only: failure changes nothing
  return reinterpret_cast<void*>(aligned);
}

void Literal::free_zeroed(void* memory, size_t bytes) {
  if (bytes < kHugePage) {
    std::free(memory);
  } else {
    ::munmap(memory, (bytes + kHugePage - 1) / kHugePage * kHugePage);
  }
}

Literal::Literal(const Shape& shape) : shape_(shape) {
  if (shape.is_tuple()) {
    elements_.reserve(shape.tuple_size());
    for (const Shape& element : shape.tuple_shapes()) elements_.emplace_back(element);
  } else if (shape.is_array()) {
    bytes_ = decltype(bytes_)(static_cast<size_t>(shape.byte_size()));  // zeros, untouched until written
  }
}

void Literal::set_shape_layouts(const Shape& shape) {
  INSITU_CHECK(shape.compatible(shape_)) << shape.to_string() << " vs " << shape_.to_string();
  shape_ = shape;
  for (int64_t i = 0; i < static_cast<int64_t>(elements_.size()); ++i)
    elements_[i].set_shape_layouts(shape.tuple_shape(i));
}

int64_t Literal::linear_index(std::span<const int64_t> index) const {
  INSITU_CHECK(static_cast<int64_t>(index.size()) == shape_.rank())
      << "index of rank " << index.size() << " into " << shape_.to_string();
  int64_t linear = 0;
  for (int64_t i = 0; i < shape_.rank(); ++i) {
    INSITU_CHECK(index[i] >= 0 && index[i] < shape_.dimension(i)) << "index out of bounds";
    linear = linear * shape_.dimension(i) + index[i];
  }
  return linear;
}

int64_t Literal::get_integer(int64_t linear) const {
  return dispatch_element_type(shape_.element_type(), [&](auto tag) -> int64_t {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      return static_cast<int64_t>(reinterpret_cast<const T*>(bytes_.data())[linear]);
    } else if constexpr (kIsSubByteInt<T>) {
      return static_cast<int64_t>(reinterpret_cast<const T*>(bytes_.data())[linear].get());
    } else {
      INSITU_UNREACHABLE("get_integer on " << shape_.to_string());
      return 0;
    }
  });
}

double Literal::get_double(int64_t linear) const {
  return dispatch_element_type(shape_.element_type(), [&](auto tag) -> double {
    using T = decltype(tag);
    const T value = reinterpret_cast<const T*>(bytes_.data())[linear];
    if constexpr (std::is_arithmetic_v<T>) {
      return static_cast<double>(value);
    } else if constexpr (kIsSmallFloat<T>) {
      return static_cast<double>(value.to_float());
    } else if constexpr (kIsSubByteInt<T>) {
      return static_cast<double>(value.get());
    } else {
      INSITU_UNREACHABLE("get_double on " << shape_.to_string());
      return 0;
    }
  });
}

const Literal* Literal::subliteral(const ShapeIndex& index) const {
  const Literal* literal = this;
  for (int64_t i : index) {
    if (!literal->shape_.is_tuple() || i < 0 || i >= static_cast<int64_t>(literal->elements_.size()))
      return nullptr;
    literal = &literal->elements_[i];
  }
  return literal;
}

Literal* Literal::mutable_subliteral(const ShapeIndex& index) {
  return const_cast<Literal*>(static_cast<const Literal*>(this)->subliteral(index));
}

Literal Literal::tuple(std::vector<Literal> elements) {
  std::vector<Shape> shapes;
  shapes.reserve(elements.size());
  for (const Literal& element : elements) shapes.push_back(element.shape());
  Literal literal;
  literal.shape_ = Shape::tuple(std::move(shapes));
  literal.elements_ = std::move(elements);
  return literal;
}

bool Literal::operator==(const Literal& other) const {
  if (!shape_.compatible(other.shape_)) return false;
  if (shape_.is_tuple()) return elements_ == other.elements_;
  return bytes_ == other.bytes_;
}

}  // namespace insitu
