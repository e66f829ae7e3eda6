// Status and StatusOr: how every user-facing failure in insitu travels.
//
// User errors (bad HLO text, shape mismatches, bad alias configs, bad arguments) are
// returned as a Status carrying a message and, where the error has one, a source location
// (line and column in the HLO text). Broken internal invariants are not Statuses: they are
// INSITU_CHECK failures (support/check.h) that abort with file:line. Nothing throws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "insitu/support/check.h"

namespace insitu {

// 1-based line and column in a text input; line 0 means "no location".
struct SourceLocation {
  int line = 0;
  int column = 0;
  bool valid() const { return line > 0; }
  bool operator==(const SourceLocation&) const = default;
};

enum class StatusCode { kOk, kInvalidArgument, kUnimplemented, kNotFound, kFailedPrecondition, kResourceExhausted, kInternal };

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message, SourceLocation location = {})
      : code_(code), message_(std::move(message)), location_(location) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  // By value on a temporary (`result.status().message()`), so that a reference to it cannot
  // outlive the Status (ThreadSanitizer found one in a test).
  const std::string& message() const& { return message_; }
  std::string message() && { return std::move(message_); }
  SourceLocation location() const { return location_; }

  // Attaches a location if the status has none yet (the innermost location wins).
  Status with_location(SourceLocation location) const;
  // Prefixes the message with context: "while verifying %x: <message>".
  Status with_context(std::string_view context) const;

  // "FILE:LINE:COL: error: message" (FILE and LINE:COL omitted where unknown).
  std::string to_string(std::string_view file = {}) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  SourceLocation location_;
};

inline Status ok_status() { return Status(); }
Status invalid_argument(std::string message, SourceLocation location = {});
Status unimplemented(std::string message, SourceLocation location = {});
Status not_found(std::string message, SourceLocation location = {});
Status failed_precondition(std::string message, SourceLocation location = {});
// Memory, threads or time the machine (or a configured budget) cannot give.
Status resource_exhausted(std::string message, SourceLocation location = {});
Status internal_error(std::string message, SourceLocation location = {});

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : value_(std::move(status)) {  // NOLINT: implicit by design
    INSITU_CHECK(!std::get<Status>(value_).ok()) << "StatusOr built from an ok Status";
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  template <typename U>
    requires(std::is_convertible_v<U &&, T> && !std::is_same_v<std::decay_t<U>, Status> &&
             !std::is_same_v<std::decay_t<U>, T>)
  StatusOr(U&& value) : value_(T(std::forward<U>(value))) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(value_); }
  Status status() const { return ok() ? Status() : std::get<Status>(value_); }

  T& value() & { return checked(); }
  const T& value() const& { return const_cast<StatusOr*>(this)->checked(); }
  T&& value() && { return std::move(checked()); }
  T& operator*() & { return checked(); }
  const T& operator*() const& { return const_cast<StatusOr*>(this)->checked(); }
  T&& operator*() && { return std::move(checked()); }
  T* operator->() { return &checked(); }
  const T* operator->() const { return &const_cast<StatusOr*>(this)->checked(); }

 private:
  T& checked() {
    INSITU_CHECK(ok()) << "value() of a failed StatusOr: " << std::get<Status>(value_).to_string();
    return std::get<T>(value_);
  }
  std::variant<Status, T> value_;
};

}  // namespace insitu

#define INSITU_CONCAT_INNER(a, b) a##b
#define INSITU_CONCAT(a, b) INSITU_CONCAT_INNER(a, b)

#define INSITU_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::insitu::Status insitu_status_ = (expr);        \
    if (!insitu_status_.ok()) return insitu_status_; \
  } while (0)

#define INSITU_ASSIGN_OR_RETURN(lhs, expr) \
  INSITU_ASSIGN_OR_RETURN_IMPL(INSITU_CONCAT(insitu_statusor_, __LINE__), lhs, expr)
#define INSITU_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
