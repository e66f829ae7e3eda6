// Array: a concrete value owning a runtime buffer, what jit-compiled functions take and return
// (jax.Array). Copies of an Array share it (a reference, like a jax.Array or torch tensor).
//
// Donation: passing an Array in a donated position consumes its buffer; the Array is then
// deleted() and any later use is an error naming it:
//   array 'cache' (f32[1024,64]) was donated to a previous call and has been deleted
// (JAX: "Array has been deleted with shape=f32[2,3]"). An argument the function mutates is not
// deleted: it is rebound to the written-back result, which is its own buffer when the kernel
// wrote in place (data() unchanged).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "insitu/runtime/buffer.h"

namespace insitu {

class Array {
 public:
  Array() = default;
  static StatusOr<Array> from_literal(const Literal& literal, std::string name = "");
  static Array from_handle(BufferHandle handle, std::string name = "");
  template <typename T>
  static Array from_vector(std::vector<int64_t> dimensions, const std::vector<T>& values, std::string name = "") {
    return from_literal(Literal::from_values<T>(std::move(dimensions), values), std::move(name)).value();
  }
  // Zero-filled.
  static Array zeros(const Shape& shape, std::string name = "");

  bool is_null() const { return state_ == nullptr; }
  const std::string& name() const;
  void set_name(std::string name);
  // The shape, also after deletion (for messages).
  const Shape& shape() const;
  bool deleted() const;
  // ok, or the error for using this array ("array 'x' (f32[4]) was donated ... deleted").
  Status check_usable() const;

  StatusOr<Literal> to_literal() const;
  template <typename T>
  StatusOr<std::vector<T>> to_vector() const {
    INSITU_RETURN_IF_ERROR(check_usable());
    if (shape().element_type() != kTypeOf<T>)
      return invalid_argument("to_vector: array '" + name() + "' holds " + shape().to_string(false));
    const T* data = reinterpret_cast<const T*>(state_->handle.data());
    return std::vector<T>(data, data + shape().element_count());
  }
  // The buffer's address; nullptr once deleted.
  const void* data() const;

  // For jit: the buffer handle, and rebinding to a written-back result.
  const BufferHandle& handle() const;
  void rebind(BufferHandle handle) const;
  bool same_array(const Array& other) const { return state_ == other.state_; }

 private:
  struct State {
    std::string name;
    Shape shape;
    BufferHandle handle;
  };
  std::shared_ptr<State> state_;
};

}  // namespace insitu
