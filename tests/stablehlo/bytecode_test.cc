// The MLIR bytecode container reader on VHLO artifacts jaxlib wrote (tests/data/stablehlo,
// generate.py), and on truncated and corrupted copies of them.
#include "insitu/stablehlo/bytecode.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>

namespace insitu::bytecode {
namespace {

std::vector<uint8_t> load(const std::string& name) {
  std::ifstream in(std::string(INSITU_SOURCE_DIR) + "/tests/data/stablehlo/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Every operation under `block`, depth first, by full name.
void count_operations(const File& file, const Block& block, std::map<std::string, int>& counts) {
  for (const Operation& op : block.operations) {
    ++counts[operation_name(file, op)];
    for (const Region& region : op.regions)
      for (const Block& inner : region.blocks) count_operations(file, inner, counts);
  }
}

// Whether every operand under `block` was resolved to a definition.
bool operands_resolved(const Block& block) {
  for (const Operation& op : block.operations) {
    for (const ValueRef& operand : op.operands)
      if (operand.operation == nullptr && operand.block == nullptr) return false;
    for (const Region& region : op.regions)
      for (const Block& inner : region.blocks)
        if (!operands_resolved(inner)) return false;
  }
  return true;
}

// The type of the value an operand reads.
uint64_t type_of(const ValueRef& value) {
  return value.operation != nullptr ? value.operation->result_types.at(value.index)
                                    : value.block->argument_types.at(value.index);
}

// Whether the operands of every elementwise binary op under `block` have its result's type: a
// value numbered wrongly (another region's, a sibling's) would show as another type somewhere.
int check_elementwise_types(const File& file, const Block& block) {
  int checked = 0;
  for (const Operation& op : block.operations) {
    const std::string name = operation_name(file, op);
    if (name == "vhlo.add_v1" || name == "vhlo.multiply_v1" || name == "vhlo.maximum_v1") {
      for (const ValueRef& operand : op.operands) EXPECT_EQ(type_of(operand), op.result_types.at(0)) << name;
      ++checked;
    }
    for (const Region& region : op.regions)
      for (const Block& inner : region.blocks) checked += check_elementwise_types(file, inner);
  }
  return checked;
}

TEST(Bytecode, ReadsTheContainerOfAVhloArtifact) {
  for (const char* version : {"1.22.0", "1.16.3"}) {
    const std::vector<uint8_t> bytes = load(std::string("add_one.v") + version + ".mlirbc");
    ASSERT_TRUE(is_bytecode(bytes));
    StatusOr<File> read = read_file(bytes);
    ASSERT_TRUE(read.ok()) << read.status().to_string();
    const File& file = *read;
    EXPECT_EQ(file.version, 6u);
    EXPECT_EQ(file.producer, std::string("StableHLO_v") + version);
    ASSERT_EQ(file.dialects.size(), 2u);
    EXPECT_EQ(file.dialects[0].name, "builtin");
    EXPECT_EQ(file.dialects[1].name, "vhlo");
    // module { func_v1 { ^bb0(%arg0): constant_v1, broadcast_in_dim_v1, add_v1, return_v1 } }
    ASSERT_EQ(file.top.operations.size(), 1u);
    const Operation& module = file.top.operations[0];
    EXPECT_EQ(operation_name(file, module), "builtin.module");
    EXPECT_TRUE(module.isolated);
    ASSERT_EQ(module.regions.size(), 1u);
    ASSERT_EQ(module.regions[0].blocks.size(), 1u);
    ASSERT_EQ(module.regions[0].blocks[0].operations.size(), 1u);
    const Operation& func = module.regions[0].blocks[0].operations[0];
    EXPECT_EQ(operation_name(file, func), "vhlo.func_v1");
    ASSERT_TRUE(func.properties.has_value());
    ASSERT_EQ(func.regions.size(), 1u);
    const Block& body = func.regions[0].blocks.at(0);
    ASSERT_EQ(body.argument_types.size(), 1u);
    ASSERT_EQ(body.operations.size(), 4u);
    const char* names[] = {"vhlo.constant_v1", "vhlo.broadcast_in_dim_v1", "vhlo.add_v1", "vhlo.return_v1"};
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(operation_name(file, body.operations[i]), names[i]);
    const Operation& add = body.operations[2];
    ASSERT_EQ(add.operands.size(), 2u);
    EXPECT_EQ(add.operands[0].block, &body);  // %arg0
    EXPECT_EQ(add.operands[0].index, 0u);
    EXPECT_EQ(add.operands[1].operation, &body.operations[1]);  // the broadcast
    ASSERT_EQ(body.operations[3].operands.size(), 1u);
    EXPECT_EQ(body.operations[3].operands[0].operation, &add);
    EXPECT_EQ(add.result_types, body.operations[1].result_types);  // one f32[4] type entry
  }
}

TEST(Bytecode, ResolvesValuesAcrossNestedRegions) {
  for (const char* name : {"loop_sum.v1.22.0.mlirbc", "cache_update.v1.16.3.mlirbc"}) {
    const std::vector<uint8_t> bytes = load(name);
    StatusOr<File> read = read_file(bytes);
    ASSERT_TRUE(read.ok()) << name << ": " << read.status().to_string();
    std::map<std::string, int> counts;
    count_operations(*read, read->top, counts);
    EXPECT_TRUE(operands_resolved(read->top)) << name;
    EXPECT_GE(check_elementwise_types(*read, read->top), 1) << name;
    if (std::string(name).starts_with("loop_sum")) {
      EXPECT_EQ(counts["vhlo.while_v1"], 1);
      EXPECT_GE(counts["vhlo.reduce_v1"], 2);  // the sum and the max
    } else {
      EXPECT_EQ(counts["vhlo.scatter_v2"] + counts["vhlo.scatter_v1"], 1);
    }
  }
}

TEST(Bytecode, BadInputIsALocatedErrorNeverACrash) {
  const std::vector<uint8_t> bytes = load("loop_sum.v1.22.0.mlirbc");
  StatusOr<File> read = read_file(std::vector<uint8_t>{'M', 'L', 'I', 'R'});
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(), "byte 0: not MLIR bytecode (no \"ML\\xefR\" magic)");
  std::vector<uint8_t> old = bytes;
  old[4] = 0x0B;  // version 5
  read = read_file(old);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(),
            "byte 5: MLIR bytecode version 5 is not read (insitu reads version 6, what StableHLO 0.15 and later write)");
  // Every truncation is an error with a byte offset inside the file.
  for (size_t size = 0; size < bytes.size(); ++size) {
    read = read_file(std::span<const uint8_t>(bytes.data(), size));
    ASSERT_FALSE(read.ok()) << "truncated to " << size;
    EXPECT_TRUE(read.status().message().starts_with("byte ")) << read.status().message();
  }
  // Any byte changed: an error or a file, never a crash (ASan/UBSan builds check the reads).
  int errors = 0;
  for (size_t at = 0; at < bytes.size(); ++at) {
    for (uint8_t flip : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
      std::vector<uint8_t> corrupt = bytes;
      corrupt[at] ^= flip;
      errors += read_file(corrupt).ok() ? 0 : 1;
    }
  }
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace insitu::bytecode
