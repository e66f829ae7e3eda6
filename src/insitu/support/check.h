// INSITU_CHECK: broken internal invariants abort with file:line and a message.
//
//   INSITU_CHECK(index < size) << "operand " << index << " out of range";
//
// Use it for programmer errors only; user errors return a Status (support/status.h).
#pragma once

#include <sstream>

namespace insitu::internal {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  template <typename T>
  CheckFailure& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

// Lets `INSITU_CHECK(c) << ...` be an expression of type void.
struct Voidify {
  void operator&(const CheckFailure&) {}
};

}  // namespace insitu::internal

#define INSITU_CHECK(condition)                       \
  (condition) ? (void)0                               \
              : ::insitu::internal::Voidify() &       \
                    ::insitu::internal::CheckFailure(__FILE__, __LINE__, #condition)

#define INSITU_UNREACHABLE(message) INSITU_CHECK(false) << message
