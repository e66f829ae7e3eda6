#include "insitu/support/status.h"

#include <cstdio>
#include <cstdlib>

namespace insitu {

namespace internal {

CheckFailure::CheckFailure(const char* file, int line, const char* condition) {
  stream_ << file << ":" << line << ": internal error: check failed: " << condition << " ";
}

CheckFailure::~CheckFailure() {
  std::fprintf(stderr, "%s\n", stream_.str().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace internal

Status Status::with_location(SourceLocation location) const {
  if (ok() || location_.valid()) return *this;
  return Status(code_, message_, location);
}

Status Status::with_context(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_, location_);
}

std::string Status::to_string(std::string_view file) const {
  if (ok()) return "ok";
  std::string out;
  if (!file.empty()) out += std::string(file) + ":";
  if (location_.valid()) out += std::to_string(location_.line) + ":" + std::to_string(location_.column) + ":";
  if (!out.empty()) out += " ";
  return out + "error: " + message_;
}

Status invalid_argument(std::string message, SourceLocation location) {
  return Status(StatusCode::kInvalidArgument, std::move(message), location);
}
Status unimplemented(std::string message, SourceLocation location) {
  return Status(StatusCode::kUnimplemented, std::move(message), location);
}
Status not_found(std::string message, SourceLocation location) {
  return Status(StatusCode::kNotFound, std::move(message), location);
}
Status failed_precondition(std::string message, SourceLocation location) {
  return Status(StatusCode::kFailedPrecondition, std::move(message), location);
}
Status resource_exhausted(std::string message, SourceLocation location) {
  return Status(StatusCode::kResourceExhausted, std::move(message), location);
}
Status internal_error(std::string message, SourceLocation location) {
  return Status(StatusCode::kInternal, std::move(message), location);
}

}  // namespace insitu
