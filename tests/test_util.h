// Shared by every test binary (tests/CMakeLists.txt puts tests/ on their include path): HLO text
// parsed for a test, the failure reported as a test failure with the parser's located message.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string_view>

#include "insitu/ir/parser.h"
#include "insitu/ir/verifier.h"

namespace insitu {

// The module `text` parses to; null (and a failed expectation) when it does not parse.
inline std::unique_ptr<Module> parse_text(std::string_view text) {
  StatusOr<std::unique_ptr<Module>> module = parse_module(text);
  EXPECT_TRUE(module.ok()) << module.status().to_string();
  return module.ok() ? std::move(module).value() : nullptr;
}

// parse_text, then the verifier (a failure is a failed expectation; the module is returned).
inline std::unique_ptr<Module> parse_verified(std::string_view text) {
  std::unique_ptr<Module> module = parse_text(text);
  if (module == nullptr) return nullptr;
  Status verified = verify_module(*module);
  EXPECT_TRUE(verified.ok()) << verified.to_string();
  return module;
}

}  // namespace insitu
