// Literal: an immutable-by-convention value of a Shape, the currency of the reference evaluator,
// constants and .npy I/O.
//
// Array data is stored densely in logical row-major order (the last dimension varies fastest),
// whatever the shape's layout says: a literal is a value, the layout is metadata that the
// runtime (not the evaluator) honours. pred is stored one byte per element (0 or 1).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "insitu/ir/shape.h"
#include "insitu/support/check.h"

namespace insitu {

class Literal {
 public:
  Literal() = default;
  // Zero-filled value of `shape` (tuples recursively, tokens empty).
  explicit Literal(const Shape& shape);

  const Shape& shape() const { return shape_; }
  // Replaces the shape with a compatible one (another layout); data is unchanged.
  void set_shape_layouts(const Shape& shape);
  bool valid() const { return shape_.element_type() != PrimitiveType::kInvalid; }

  // --- arrays ---
  int64_t element_count() const { return shape_.element_count(); }
  int64_t size_bytes() const { return static_cast<int64_t>(bytes_.size()); }
  uint8_t* untyped_data() { return bytes_.data(); }
  const uint8_t* untyped_data() const { return bytes_.data(); }

  template <typename T>
  std::span<T> data() {
    check_type<T>();
    return {reinterpret_cast<T*>(bytes_.data()), static_cast<size_t>(element_count())};
  }
  template <typename T>
  std::span<const T> data() const {
    check_type<T>();
    return {reinterpret_cast<const T*>(bytes_.data()), static_cast<size_t>(element_count())};
  }

  // Row-major linear position of a multi-index.
  int64_t linear_index(std::span<const int64_t> index) const;
  template <typename T>
  T get(std::span<const int64_t> index) const { return data<T>()[linear_index(index)]; }
  template <typename T>
  T get(std::initializer_list<int64_t> index) const {
    return get<T>(std::span<const int64_t>(index.begin(), index.size()));
  }
  template <typename T>
  void set(std::span<const int64_t> index, T value) { data<T>()[linear_index(index)] = value; }
  template <typename T>
  void set(std::initializer_list<int64_t> index, T value) {
    set<T>(std::span<const int64_t>(index.begin(), index.size()), value);
  }

  // Element `linear` of an integral or pred array, widened (indices of dynamic-slice etc.).
  int64_t get_integer(int64_t linear) const;
  // Element `linear` of a real array as double (pred/integers/floats).
  double get_double(int64_t linear) const;

  // --- tuples ---
  std::vector<Literal>& elements() { return elements_; }
  const std::vector<Literal>& elements() const { return elements_; }
  Literal& element(int64_t i) { return elements_.at(i); }
  const Literal& element(int64_t i) const { return elements_.at(i); }
  // The sub-value at `index`; nullptr if the index does not exist.
  const Literal* subliteral(const ShapeIndex& index) const;
  Literal* mutable_subliteral(const ShapeIndex& index);

  // --- construction ---
  static Literal tuple(std::vector<Literal> elements);
  template <typename T>
  static Literal scalar(T value) {
    return from_values<T>({}, {value});
  }
  template <typename T>
  static Literal vector(std::vector<T> values) {
    int64_t n = static_cast<int64_t>(values.size());
    return from_values<T>({n}, std::move(values));
  }
  template <typename T>
  static Literal from_values(std::vector<int64_t> dimensions, const std::vector<T>& values) {
    Literal literal(Shape::array(kTypeOf<T>, std::move(dimensions)));
    INSITU_CHECK(static_cast<int64_t>(values.size()) == literal.element_count())
        << "from_values: " << values.size() << " values for " << literal.shape().to_string();
    std::copy(values.begin(), values.end(), literal.data<T>().begin());
    return literal;
  }

  // Same compatible shape (layouts ignored) and identical bytes (NaNs compare by bits).
  bool operator==(const Literal& other) const;

  // XLA literal text, e.g. "s32[4] {1, 2, 3, 4}", "(f32[], s32[2]) (1, {2, 3})". Every element
  // is printed; tools/ abbreviates large values. Implemented in literal_text.cc.
  std::string to_string() const;
  // Just the value part: "{1, 2, 3, 4}" or "1" (what constant(...) prints).
  std::string values_to_string() const;

 private:
  template <typename T>
  void check_type() const {
    INSITU_CHECK(shape_.element_type() == kTypeOf<T>)
        << "literal of " << shape_.to_string() << " accessed as " << primitive_type_name(kTypeOf<T>);
  }

  // Zeroed memory for an array's bytes (literal.cc): calloc's; from 2 MiB on, fresh pages of
  // the system's, advised as huge pages. Either way a big literal's pages are written only when
  // the literal is (a constant read from a file is written once, not zero-filled first), and
  // first writes fault 512x less often. Throws std::bad_alloc as new does.
  static void* allocate_zeroed(size_t bytes);
  static void free_zeroed(void* memory, size_t bytes);
  // An array's bytes, zero from allocate_zeroed. Value-initialization leaves those zeros, so
  // the storage must never shrink and grow again (nothing here does: it is sized once, at
  // construction).
  template <typename T>
  struct ZeroAllocator {
    using value_type = T;
    ZeroAllocator() = default;
    template <typename U>
    ZeroAllocator(const ZeroAllocator<U>&) {}  // NOLINT: rebinding
    T* allocate(size_t count) { return static_cast<T*>(allocate_zeroed(count * sizeof(T))); }
    void deallocate(T* memory, size_t count) { free_zeroed(memory, count * sizeof(T)); }
    template <typename U>
    void construct(U*) noexcept {}  // value-initialization: calloc's zeros are the value
    template <typename U, typename... Args>
    void construct(U* at, Args&&... args) {
      ::new (static_cast<void*>(at)) U(std::forward<Args>(args)...);
    }
    bool operator==(const ZeroAllocator&) const { return true; }
  };

  Shape shape_;
  std::vector<uint8_t, ZeroAllocator<uint8_t>> bytes_;  // arrays
  std::vector<Literal> elements_;                       // tuples
};

}  // namespace insitu
