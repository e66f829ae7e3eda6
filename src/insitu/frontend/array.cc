// Array (array.h).
#include "insitu/frontend/array.h"

#include "insitu/support/str.h"

namespace insitu {

StatusOr<Array> Array::from_literal(const Literal& literal, std::string name) {
  if (!literal.shape().is_array()) return invalid_argument("Array::from_literal: an Array holds one array, not " + literal.shape().to_string());
  INSITU_ASSIGN_OR_RETURN(BufferHandle handle, BufferHandle::from_literal(literal));
  return from_handle(std::move(handle), std::move(name));
}

Array Array::from_handle(BufferHandle handle, std::string name) {
  INSITU_CHECK(handle.is_usable()) << "Array::from_handle needs a usable buffer";
  Array array;
  array.state_ = std::make_shared<State>(State{std::move(name), handle.shape(), std::move(handle)});
  return array;
}

Array Array::zeros(const Shape& shape, std::string name) {
  return from_handle(BufferHandle(std::make_shared<Buffer>(shape)), std::move(name));
}

const std::string& Array::name() const {
  INSITU_CHECK(state_ != nullptr) << "null Array";
  return state_->name;
}

void Array::set_name(std::string name) {
  INSITU_CHECK(state_ != nullptr) << "null Array";
  state_->name = std::move(name);
}

const Shape& Array::shape() const {
  INSITU_CHECK(state_ != nullptr) << "null Array";
  return state_->shape;
}

bool Array::deleted() const { return state_ != nullptr && !state_->handle.is_usable(); }

Status Array::check_usable() const {
  if (state_ == nullptr) return invalid_argument("use of a null Array (default-constructed)");
  if (state_->handle.is_usable()) return ok_status();
  return failed_precondition(str_cat("array '", state_->name.empty() ? "<unnamed>" : state_->name, "' (",
                                     state_->shape.to_string(false),
                                     ") was donated to a previous call and has been deleted; "
                                     "keep using the call's result instead, or do not donate it"));
}

StatusOr<Literal> Array::to_literal() const {
  INSITU_RETURN_IF_ERROR(check_usable());
  return state_->handle.to_literal();
}

const void* Array::data() const { return deleted() || state_ == nullptr ? nullptr : state_->handle.data(); }

const BufferHandle& Array::handle() const {
  INSITU_CHECK(state_ != nullptr) << "null Array";
  return state_->handle;
}

void Array::rebind(BufferHandle handle) const {
  INSITU_CHECK(state_ != nullptr && handle.is_usable()) << "rebinding a null Array or to an unusable buffer";
  state_->shape = handle.shape();
  state_->handle = std::move(handle);
}

}  // namespace insitu
