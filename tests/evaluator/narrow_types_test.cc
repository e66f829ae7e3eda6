// The narrow element types (f8*, f4e2m1fn, s4, u4, s2, u2, s1, u1): their codes, the evaluator's
// arithmetic on them, bitcast-convert on bits, constants in the text and .npy files. The
// exhaustive comparisons with ml_dtypes and XLA:CPU are python/tests/test_narrow_types.py; these
// are the values worth knowing by heart, checked without Python.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/npy.h"
#include "insitu/ir/parser.h"
#include "insitu/ir/printer.h"

namespace insitu {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Literal evaluate_text(const std::string& text) {
  StatusOr<std::unique_ptr<Module>> module = parse_module(text);
  EXPECT_TRUE(module.ok()) << module.status().to_string();
  if (!module.ok()) return Literal();
  StatusOr<Literal> result = evaluate_module(**module, {});
  EXPECT_TRUE(result.ok()) << result.status().to_string();
  return result.ok() ? *result : Literal();
}

std::vector<float> floats_of(const Literal& literal) {
  auto data = literal.data<float>();
  return {data.begin(), data.end()};
}

std::vector<int32_t> ints_of(const Literal& literal) {
  auto data = literal.data<int32_t>();
  return {data.begin(), data.end()};
}

TEST(NarrowFloats, EachFormatsLimitsAndSpecialValues) {
  EXPECT_EQ(narrow_float_max(Float8E4M3FN::kFormat), 448);
  EXPECT_EQ(narrow_float_max(Float8E4M3::kFormat), 240);
  EXPECT_EQ(narrow_float_max(Float8E5M2::kFormat), 57344);
  EXPECT_EQ(narrow_float_max(Float8E3M4::kFormat), 15.5);
  EXPECT_EQ(narrow_float_max(Float8E4M3FNUZ::kFormat), 240);
  EXPECT_EQ(narrow_float_max(Float8E4M3B11FNUZ::kFormat), 30);
  EXPECT_EQ(narrow_float_max(Float8E8M0FNU::kFormat), std::ldexp(1.0, 127));
  EXPECT_EQ(narrow_float_max(Float4E2M1FN::kFormat), 6);
  // Smallest subnormal of f8e4m3fn: 2^-9; half of it ties to even (zero), a bit more rounds up.
  EXPECT_EQ(Float8E4M3FN::from_double(std::ldexp(1.0, -9)).bits, 0x01);
  EXPECT_EQ(Float8E4M3FN::from_double(std::ldexp(1.0, -10)).bits, 0x00);
  EXPECT_EQ(Float8E4M3FN::from_double(std::ldexp(1.0, -10) * 1.0001).bits, 0x01);
  // Overflow: f8e4m3fn rounds 464 (the midpoint to 480) down to 448 and 470 to NaN; IEEE
  // formats go to inf; the fnuz ones to their only NaN 0x80; f4e2m1fn saturates.
  EXPECT_EQ(Float8E4M3FN::from_double(464).to_float(), 448);
  EXPECT_EQ(Float8E4M3FN::from_double(-470).bits, 0xff);
  EXPECT_EQ(Float8E4M3FN::from_double(kInf).bits, 0x7f);
  EXPECT_EQ(Float8E5M2::from_double(61440).to_float(), std::numeric_limits<float>::infinity());
  EXPECT_EQ(Float8E5M2::from_double(-kNaN).bits, 0xfe);
  EXPECT_EQ(Float8E4M3FNUZ::from_double(-kInf).bits, 0x80);
  EXPECT_EQ(Float8E4M3FNUZ::from_double(-0.0).bits, 0x00);  // no -0
  EXPECT_TRUE(std::isnan(Float8E4M3FNUZ::from_bits(0x80).to_float()));
  EXPECT_EQ(Float4E2M1FN::from_double(100).to_float(), 6);
  EXPECT_EQ(Float4E2M1FN::from_double(-kInf).to_float(), -6);
  EXPECT_EQ(Float4E2M1FN::from_double(kNaN).bits, 0x8);  // no NaN: ml_dtypes gives -0
  // f8e8m0fnu: powers of two only, no zero, no sign.
  EXPECT_EQ(Float8E8M0FNU::from_double(1).bits, 127);
  EXPECT_EQ(Float8E8M0FNU::from_double(0.3).to_float(), 0.25f);
  EXPECT_EQ(Float8E8M0FNU::from_double(0).bits, 0xff);
  EXPECT_EQ(Float8E8M0FNU::from_double(-1).bits, 0xff);
}

TEST(NarrowFloats, ArithmeticRoundsAfterEveryOp) {
  Literal result = evaluate_text(R"(HloModule m
ENTRY e {
  a = f8e4m3fn[4] constant({1, 2.5, -448, 0.01})
  b = f8e4m3fn[4] constant({3, 200, -1, nan})
  s = f8e4m3fn[4] add(a, b)
  ROOT c = f32[4] convert(s)
})");
  std::vector<float> got = floats_of(result);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], 4);
  EXPECT_EQ(got[1], 192);   // 2.5 + 192 (200 rounded) = 194.5 -> 192
  EXPECT_EQ(got[2], -448);  // -449 rounds back to the largest value
  EXPECT_TRUE(std::isnan(got[3]));
}

TEST(SubByteIntegers, WrapAndSeeTheirOwnWidth) {
  Literal result = evaluate_text(R"(HloModule m
ENTRY e {
  i = s4[4] constant({-8, 7, 3, -1})
  j = s4[4] constant({-1, 1, 2, 3})
  u = u4[4] constant({15, 8, 1, 0})
  one = u4[4] constant({1, 1, 1, 1})
  add = s32[4] convert(s4[4] add(i, j))
  srl = s32[4] convert(s4[4] shift-right-logical(i, j))
  sra = s32[4] convert(u4[4] shift-right-arithmetic(u, one))
  clz = s32[4] convert(s4[4] count-leading-zeros(j))
  pop = s32[4] convert(u4[4] popcnt(u))
  hi = s32[4] convert(s4[4] mulhi(i, j))
  sat = s32[4] convert(s4[4] convert(f32[4] constant({100, -100, nan, 6.9})))
  ROOT r = (s32[4], s32[4], s32[4], s32[4], s32[4], s32[4], s32[4]) tuple(add, srl, sra, clz, pop, hi, sat)
})");
  ASSERT_TRUE(result.shape().is_tuple());
  EXPECT_EQ(ints_of(result.element(0)), (std::vector<int32_t>{7, -8, 5, 2}));
  EXPECT_EQ(ints_of(result.element(1)), (std::vector<int32_t>{0, 3, 0, 1}));   // -8 >>> 15 == 0 (amount >= 4)
  EXPECT_EQ(ints_of(result.element(2)), (std::vector<int32_t>{15, 12, 0, 0}));  // u4 0xf >> 1 (signed view)
  EXPECT_EQ(ints_of(result.element(3)), (std::vector<int32_t>{0, 3, 2, 2}));
  EXPECT_EQ(ints_of(result.element(4)), (std::vector<int32_t>{4, 1, 1, 0}));
  EXPECT_EQ(ints_of(result.element(5)), (std::vector<int32_t>{0, 0, 0, -1}));   // (-1 * 3) >> 4
  EXPECT_EQ(ints_of(result.element(6)), (std::vector<int32_t>{7, -8, 0, 6}));  // saturates, NaN -> 0
}

TEST(SubByteIntegers, BitcastConvertWorksOnBitsLowFirst) {
  Literal result = evaluate_text(R"(HloModule m
ENTRY e {
  bytes = u8[2] constant({0x21, 0xf3})
  nibbles = s4[2,2] bitcast-convert(bytes)
  back = u8[2] bitcast-convert(nibbles)
  as_unsigned = u4[2,2] bitcast-convert(nibbles)
  ROOT r = (s32[2,2], s32[2], s32[2,2]) tuple(s32[2,2] convert(nibbles), s32[2] convert(back), s32[2,2] convert(as_unsigned))
})");
  ASSERT_TRUE(result.shape().is_tuple());
  EXPECT_EQ(ints_of(result.element(0)), (std::vector<int32_t>{1, 2, 3, -1}));
  EXPECT_EQ(ints_of(result.element(1)), (std::vector<int32_t>{0x21, 0xf3}));
  EXPECT_EQ(ints_of(result.element(2)), (std::vector<int32_t>{1, 2, 3, 15}));
}

TEST(NarrowConstants, PrintAsXlaAndParseBack) {
  const std::string text = R"(HloModule m
ENTRY e {
  a = f8e5m2[3] constant({57344, -0.0001, nan})
  b = s4[3] constant({-8, 0, 7})
  c = f4e2m1fn[2] constant({-6, 0.5})
  ROOT t = (f8e5m2[3], s4[3], f4e2m1fn[2]) tuple(a, b, c)
})";
  StatusOr<std::unique_ptr<Module>> module = parse_module(text);
  ASSERT_TRUE(module.ok()) << module.status().to_string();
  const std::string printed = print_module(**module);
  EXPECT_NE(printed.find("f8e5m2[3]{0} constant({5.7e+04, -0.00011, nan})"), std::string::npos) << printed;
  EXPECT_NE(printed.find("s4[3]{0} constant({-8, 0, 7})"), std::string::npos) << printed;
  EXPECT_NE(printed.find("f4e2m1fn[2]{0} constant({-6, 0.5})"), std::string::npos) << printed;
  StatusOr<std::unique_ptr<Module>> again = parse_module(printed);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(print_module(**again), printed);
}

TEST(NarrowConstants, ValuesTheTypeCannotHoldAreLocatedErrors) {
  struct Case {
    std::string constant;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"f8e4m3fn[] constant(500)", "value 500 is out of range for f8e4m3fn (it would round to NaN)"},
           {"f8e4m3fn[] constant(inf)", "f8e4m3fn has no infinity"},
           {"f8e5m2[] constant(1e6)", "value 1e6 is out of range for f8e5m2 (it would round to infinity)"},
           {"f4e2m1fn[] constant(nan)", "f4e2m1fn has no NaN"},
           {"f8e8m0fnu[] constant(0)", "value 0 is out of range for f8e8m0fnu (it would round to NaN)"},
           {"s4[] constant(8)", "value 8 does not fit in s4 (-8 .. 7)"},
           {"u2[] constant(-1)", "value -1 does not fit in u2 (0 .. 3)"},
           {"f8e4m3fn[] constant(nan(0x3))", "f8e4m3fn has a single NaN, without a payload"},
       }) {
    StatusOr<std::unique_ptr<Module>> module = parse_module("HloModule m\nENTRY e {\n  ROOT c = " + c.constant + "\n}\n");
    ASSERT_FALSE(module.ok()) << c.constant;
    EXPECT_NE(module.status().message().find(c.message), std::string::npos) << module.status().to_string();
    EXPECT_EQ(module.status().location().line, 3) << c.constant;
  }
}

TEST(NarrowNpy, ReadAndWrittenAsMlDtypesVoidBytes) {
  Literal literal(Shape::array(PrimitiveType::kS4, {3}));
  literal.data<Int4>()[0] = Int4::wrap(static_cast<uint64_t>(-3));
  literal.data<Int4>()[1] = Int4::wrap(7);
  literal.data<Int4>()[2] = Int4::wrap(static_cast<uint64_t>(-8));
  StatusOr<std::string> bytes = serialize_npy(literal);
  ASSERT_TRUE(bytes.ok());
  EXPECT_NE(bytes->find("'descr': '<V1'"), std::string::npos);
  // Without the parameter's type a 1-byte void file is not guessed at.
  StatusOr<Literal> unknown = parse_npy(*bytes);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("1-byte void"), std::string::npos);
  StatusOr<Literal> back = parse_npy(*bytes, {.void_type = PrimitiveType::kS4});
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->data<Int4>()[0].get(), -3);
  EXPECT_EQ(back->data<Int4>()[2].get(), -8);
  // A byte is read by its low bits: 0x0f is -1 in s4, kept canonical (sign-extended).
  std::string file = *bytes;
  file[file.size() - 3] = 0x0f;
  StatusOr<Literal> low_bits = parse_npy(file, {.void_type = PrimitiveType::kS4});
  ASSERT_TRUE(low_bits.ok());
  EXPECT_EQ(low_bits->data<Int4>()[0].get(), -1);
  EXPECT_EQ(low_bits->untyped_data()[0], 0xff) << "not canonical";
}

}  // namespace
}  // namespace insitu
