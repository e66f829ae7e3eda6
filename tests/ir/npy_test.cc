// Tests for .npy reading and writing against files numpy and ml_dtypes wrote
// (tests/data/npy/make_fixtures.py regenerates them).
#include "insitu/ir/npy.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace insitu {
namespace {

std::string fixture(const std::string& name) { return std::string(INSITU_SOURCE_DIR) + "/tests/data/npy/" + name; }

std::string file_bytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

Literal load(const std::string& name, NpyReadOptions options = {}) {
  StatusOr<Literal> literal = read_npy_file(fixture(name), options);
  EXPECT_TRUE(literal.ok()) << literal.status().to_string();
  return literal.ok() ? *literal : Literal();
}

struct RealCase {
  const char* file;
  PrimitiveType type;
};

TEST(NpyTest, ReadsEveryRealDtypeInBothByteOrders) {
  const RealCase cases[] = {
      {"le_i1.npy", PrimitiveType::kS8},  {"le_i2.npy", PrimitiveType::kS16}, {"be_i2.npy", PrimitiveType::kS16},
      {"le_i4.npy", PrimitiveType::kS32}, {"be_i4.npy", PrimitiveType::kS32}, {"le_i8.npy", PrimitiveType::kS64},
      {"le_u1.npy", PrimitiveType::kU8},  {"le_u2.npy", PrimitiveType::kU16}, {"le_u4.npy", PrimitiveType::kU32},
      {"be_u8.npy", PrimitiveType::kU64}, {"le_f2.npy", PrimitiveType::kF16}, {"be_f2.npy", PrimitiveType::kF16},
      {"le_f4.npy", PrimitiveType::kF32}, {"be_f4.npy", PrimitiveType::kF32}, {"le_f8.npy", PrimitiveType::kF64},
      {"be_f8.npy", PrimitiveType::kF64}, {"v2_i4.npy", PrimitiveType::kS32}, {"v3_i4.npy", PrimitiveType::kS32},
  };
  for (const RealCase& c : cases) {
    SCOPED_TRACE(c.file);
    Literal literal = load(c.file);
    ASSERT_EQ(literal.shape().element_type(), c.type);
    ASSERT_EQ(literal.shape().dimensions(), (std::vector<int64_t>{2, 3}));
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(literal.get_double(i), static_cast<double>(i));
  }
}

TEST(NpyTest, ReadsComplexInBothByteOrders) {
  Literal c64 = load("le_c8.npy");
  ASSERT_EQ(c64.shape().element_type(), PrimitiveType::kC64);
  EXPECT_EQ(c64.get<std::complex<float>>({1, 2}), std::complex<float>(5, 15));
  Literal c128 = load("be_c16.npy");
  ASSERT_EQ(c128.shape().element_type(), PrimitiveType::kC128);
  EXPECT_EQ(c128.get<std::complex<double>>({0, 1}), std::complex<double>(1, 11));
  EXPECT_EQ(c128.get<std::complex<double>>({1, 2}), std::complex<double>(5, 15));
}

TEST(NpyTest, ReadsBool) {
  Literal literal = load("bool.npy");
  EXPECT_EQ(literal, Literal::from_values<bool>({2, 3}, {true, false, true, false, true, false}));
}

TEST(NpyTest, ReadsMlDtypesBfloat16AsVoid2) {
  Literal literal = load("bf16.npy");
  ASSERT_EQ(literal.shape().to_string(false), "bf16[2,3]");
  EXPECT_EQ(literal.get<BFloat16>({0, 0}).to_float(), 1.5f);
  EXPECT_EQ(literal.get<BFloat16>({0, 2}).to_float(), 3.25f);
  EXPECT_EQ(literal.get<BFloat16>({1, 1}).bits, 20501);  // 1e10 rounded to bf16
  EXPECT_EQ(literal.get<BFloat16>({1, 2}).to_float(), -0.5f);
  // The same bytes as another 2-byte type when the parameter asks for it.
  Literal as_u16 = load("bf16.npy", {.void_type = PrimitiveType::kU16});
  EXPECT_EQ(as_u16.get<uint16_t>({1, 1}), 20501);
}

TEST(NpyTest, Void2CannotFeedAWiderType) {
  StatusOr<Literal> literal = read_npy_file(fixture("bf16.npy"), {.void_type = PrimitiveType::kF32});
  ASSERT_FALSE(literal.ok());
  EXPECT_NE(literal.status().message().find("cannot hold f32"), std::string::npos) << literal.status().message();
}

TEST(NpyTest, TransposesFortranOrder) {
  Literal f32 = load("fortran_f4.npy");
  EXPECT_EQ(f32, Literal::from_values<float>({2, 3}, {0, 1, 2, 3, 4, 5}));
  Literal i16 = load("fortran_3d_i2.npy");
  ASSERT_EQ(i16.shape().to_string(false), "s16[2,3,4]");
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(i16.get_integer(i), i);
}

TEST(NpyTest, ReadsScalarsAndEmptyArrays) {
  EXPECT_EQ(load("scalar_f8.npy"), Literal::scalar<double>(2.5));
  Literal empty = load("empty_s32.npy");
  EXPECT_EQ(empty.shape().to_string(false), "s32[0,4]");
  EXPECT_EQ(empty.size_bytes(), 0);
}

TEST(NpyTest, WritesExactlyWhatNumpyWrites) {
  // numpy.save(np.arange(6).reshape(2,3).astype('<i4')) and ml_dtypes bfloat16 files.
  EXPECT_EQ(*serialize_npy(load("le_i4.npy")), file_bytes(fixture("le_i4.npy")));
  EXPECT_EQ(*serialize_npy(load("bf16.npy")), file_bytes(fixture("bf16.npy")));
  EXPECT_EQ(*serialize_npy(load("bool.npy")), file_bytes(fixture("bool.npy")));
  EXPECT_EQ(*serialize_npy(load("scalar_f8.npy")), file_bytes(fixture("scalar_f8.npy")));
  EXPECT_EQ(*serialize_npy(load("le_c8.npy")), file_bytes(fixture("le_c8.npy")));
  EXPECT_EQ(serialize_npy(Literal::vector<uint8_t>({1, 2, 3})).value().substr(0, 60),
            std::string("\x93NUMPY\x01\x00\x76\x00{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", 60));
}

TEST(NpyTest, RoundTripsEveryType) {
  for (PrimitiveType type : {PrimitiveType::kPred, PrimitiveType::kS8, PrimitiveType::kS16, PrimitiveType::kS32,
                             PrimitiveType::kS64, PrimitiveType::kU8, PrimitiveType::kU16, PrimitiveType::kU32,
                             PrimitiveType::kU64, PrimitiveType::kF16, PrimitiveType::kBF16, PrimitiveType::kF32,
                             PrimitiveType::kF64, PrimitiveType::kC64, PrimitiveType::kC128}) {
    SCOPED_TRACE(primitive_type_name(type));
    Literal literal(Shape::array(type, {3, 1, 2}));
    for (int64_t i = 0; i < literal.size_bytes(); ++i) literal.untyped_data()[i] = static_cast<uint8_t>(i * 7 + 1);
    if (type == PrimitiveType::kPred)
      for (int64_t i = 0; i < literal.size_bytes(); ++i) literal.untyped_data()[i] = i % 2;
    StatusOr<std::string> bytes = serialize_npy(literal);
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(bytes->size() % 64, static_cast<size_t>(literal.size_bytes() % 64));  // header aligned to 64
    StatusOr<Literal> back = parse_npy(*bytes, {.void_type = type == PrimitiveType::kBF16 ? type : PrimitiveType::kBF16});
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_EQ(*back, literal);
  }
}

TEST(NpyTest, WriteAndReadAFile) {
  std::string path = (std::filesystem::temp_directory_path() / "insitu_npy_test_out.npy").string();
  Literal literal = Literal::from_values<float>({2, 2}, {1, -2, 3.5f, 4});
  ASSERT_TRUE(write_npy_file(path, literal).ok());
  StatusOr<Literal> back = read_npy_file(path);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, literal);
  std::filesystem::remove(path);
}

TEST(NpyTest, RejectsBadFilesWithClearMessages) {
  auto message = [](std::string_view bytes) { return parse_npy(bytes).status().message(); };
  EXPECT_NE(message("hello world, not npy").find("not a .npy file"), std::string::npos);
  std::string good = file_bytes(fixture("le_i4.npy"));
  EXPECT_NE(message(good.substr(0, good.size() - 3)).find("truncated .npy data: s32[2,3] needs 24 bytes but the file holds 21"),
            std::string::npos)
      << message(good.substr(0, good.size() - 3));
  EXPECT_NE(message(good + "xy").find("2 bytes after the data"), std::string::npos);
  EXPECT_NE(message(good.substr(0, 40)).find("truncated .npy header"), std::string::npos);
  std::string bad_version = good;
  bad_version[6] = 9;
  EXPECT_NE(message(bad_version).find("unsupported .npy format version 9.0"), std::string::npos);

  StatusOr<Literal> unicode = read_npy_file(fixture("unicode.npy"));
  ASSERT_FALSE(unicode.ok());
  EXPECT_NE(unicode.status().message().find("unsupported .npy dtype '<U2'"), std::string::npos);
  EXPECT_NE(unicode.status().message().find("unicode.npy"), std::string::npos);  // names the file

  StatusOr<Literal> missing = read_npy_file("/nonexistent/dir/x.npy");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "cannot open '/nonexistent/dir/x.npy': No such file or directory");
}

TEST(NpyTest, RejectsStructuredAndMalformedHeaders) {
  auto with_header = [](const std::string& dict) {
    std::string out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(dict.size());
    out += '\0';
    return out + dict;
  };
  EXPECT_NE(parse_npy(with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }\n"))
                .status()
                .message()
                .find("structured dtypes"),
            std::string::npos);
  EXPECT_NE(parse_npy(with_header("{'descr': '<f4', 'shape': (1,), }\n")).status().message().find("lacks one of"),
            std::string::npos);
  EXPECT_NE(parse_npy(with_header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,)}\n"))
                .status()
                .message()
                .find("expected True or False"),
            std::string::npos);
  // A header written without the trailing comma or with Python 2 long suffixes still loads.
  StatusOr<Literal> literal =
      parse_npy(with_header("{'descr': '<i2', 'fortran_order': False, 'shape': (2L,)}\n") + std::string("\x01\x00\x02\x00", 4));
  ASSERT_TRUE(literal.ok()) << literal.status().to_string();
  EXPECT_EQ(*literal, Literal::vector<int16_t>({1, 2}));
}

TEST(NpyTest, RefusesToWriteTuples) {
  StatusOr<std::string> bytes = serialize_npy(Literal::tuple({Literal::scalar<int32_t>(1)}));
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("only arrays"), std::string::npos);
}

}  // namespace
}  // namespace insitu
