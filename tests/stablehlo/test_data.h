// The StableHLO tests' inputs: tests/data/stablehlo's files (generate.py writes them) as bytes.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <span>
#include <string>

namespace insitu::stablehlo::testing_data {

inline std::string load(const std::string& name) {
  std::ifstream in(std::string(INSITU_SOURCE_DIR) + "/tests/data/stablehlo/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::span<const uint8_t> bytes_of(const std::string& text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

}  // namespace insitu::stablehlo::testing_data
