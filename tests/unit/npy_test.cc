// NDArray element access, float16 conversion and .npy reading and writing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "support/bit_cast.h"
#include "support/diagnostic.h"
#include "support/ndarray.h"
#include "support/npy.h"
#include "support/source_dir.h"

namespace mtir {
namespace {

// The message of the first diagnostic `f` throws, or "" (and a test failure).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const DiagnosticError& e) {
    EXPECT_FALSE(e.internal()) << e.what();
    return e.diagnostics().empty() ? "" : e.diagnostics()[0].message;
  }
  ADD_FAILURE() << "expected a DiagnosticError";
  return "";
}

// A .npy file with the given version, header text (padded here) and data bytes.
std::string make_npy(int major, std::string header, const std::string& data) {
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t prefix = 8 + len_bytes;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t b = 0; b < len_bytes; ++b) out += static_cast<char>((header.size() >> (8 * b)) & 0xff);
  return out + header + data;
}

std::string float32_bytes(std::initializer_list<float> values) {
  std::string s;
  for (float v : values) {
    char b[4];
    std::memcpy(b, &v, 4);  // the test host is little-endian, like every target
    s.append(b, 4);
  }
  return s;
}

// ---- float16 -------------------------------------------------------------------

TEST(Float16, KnownEncodings) {
  EXPECT_EQ(float_to_half(0.0), 0x0000);
  EXPECT_EQ(float_to_half(-0.0), 0x8000);
  EXPECT_EQ(float_to_half(1.0), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0), 0xc000);
  EXPECT_EQ(float_to_half(65504.0), 0x7bff);  // largest finite
  EXPECT_EQ(float_to_half(65519.99), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0), 0x7c00);  // halfway to 65536 rounds (to even) to inf
  EXPECT_EQ(float_to_half(1e10), 0x7c00);
  EXPECT_EQ(float_to_half(HUGE_VAL), 0x7c00);
  EXPECT_EQ(float_to_half(-HUGE_VAL), 0xfc00);
  uint16_t nan = float_to_half(std::nan(""));
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
  EXPECT_TRUE(std::isnan(half_to_float(nan)));
}

TEST(Float16, SubnormalsAndTies) {
  EXPECT_EQ(float_to_half(std::ldexp(1.0, -24)), 0x0001);      // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1023.0, -24)), 0x03ff);   // largest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0, -14)), 0x0400);      // smallest normal
  EXPECT_EQ(float_to_half(std::ldexp(1.0, -25)), 0x0000);      // tie 0 / 2^-24: even is 0
  EXPECT_EQ(float_to_half(std::ldexp(1.0, -25) * 1.0001), 0x0001);
  EXPECT_EQ(float_to_half(std::ldexp(3.0, -25)), 0x0002);      // tie 1 / 2: even is 2
  EXPECT_EQ(float_to_half(std::ldexp(2047.0, -25)), 0x0400);   // tie rounds up into the normals
  EXPECT_EQ(float_to_half(1.0 + std::ldexp(1.0, -11)), 0x3c00);      // tie, keeps even mantissa 0
  EXPECT_EQ(float_to_half(1.0 + std::ldexp(3.0, -11)), 0x3c02);      // tie, rounds to even mantissa 2
  EXPECT_EQ(float_to_half(2049.0), float_to_half(2048.0));           // spacing 2 above 2048
  EXPECT_EQ(float_to_half(2051.0), float_to_half(2052.0));
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0, -24));
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125);
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
}

TEST(Float16, EveryEncodingRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    double v = half_to_float(static_cast<uint16_t>(bits));
    if (std::isnan(v)) continue;
    ASSERT_EQ(float_to_half(v), bits) << "bits " << bits;
  }
}

// An independent reference: the nearest finite half by search, ties to the even
// encoding. Checks one rounding, straight from double (no detour through float).
TEST(Float16, MatchesBruteForceNearest) {
  std::vector<double> finite;
  for (uint32_t bits = 0; bits < 0x7c00; ++bits) finite.push_back(half_to_float(static_cast<uint16_t>(bits)));
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> mant(0.0, 1.0);
  std::uniform_int_distribution<int> expo(-27, 16);
  for (int n = 0; n < 3000; ++n) {
    double x = std::ldexp(mant(rng), expo(rng));
    if (x >= 65520.0) continue;  // overflow handled in KnownEncodings
    size_t hi = static_cast<size_t>(std::lower_bound(finite.begin(), finite.end(), x) - finite.begin());
    uint16_t expected;
    if (hi < finite.size() && finite[hi] == x) {
      expected = static_cast<uint16_t>(hi);
    } else {
      size_t lo = hi - 1;
      double dlo = x - finite[lo], dhi = finite[hi] - x;
      expected = static_cast<uint16_t>(dlo < dhi ? lo : dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi));
    }
    ASSERT_EQ(float_to_half(x), expected) << "x = " << x;
    ASSERT_EQ(float_to_half(-x), expected | 0x8000) << "x = " << -x;
  }
}

// ---- NDArray --------------------------------------------------------------------

// bit_cast (support/bit_cast.h), which NDArray's float elements and the interpreter's
// T.reinterpret read and write encodings with: IEEE encodings both ways, NaN payloads kept.
TEST(BitCast, FloatEncodingsBothWays) {
  EXPECT_EQ(bit_cast<uint32_t>(1.0f), 0x3F800000u);
  EXPECT_EQ(bit_cast<float>(0xC0490FDBu), -3.14159274f);
  EXPECT_EQ(bit_cast<uint64_t>(-2.0), 0xC000000000000000u);
  EXPECT_EQ(bit_cast<double>(uint64_t{0x3FB999999999999A}), 0.1);
  EXPECT_EQ(bit_cast<uint32_t>(bit_cast<float>(0x7FC00123u)), 0x7FC00123u);
  NDArray a = NDArray::zeros(DataType::Float(32), {1});
  a.set_float(0, -3.14159274);
  EXPECT_EQ(a.data, (std::vector<uint8_t>{0xDB, 0x0F, 0x49, 0xC0}));
}

TEST(NDArray, ZerosAndLittleEndianLayout) {
  NDArray a = NDArray::zeros(DataType::Int(32), {2, 3});
  EXPECT_EQ(a.num_elements(), 6);
  EXPECT_EQ(a.data.size(), 24u);
  a.set_int(1, 0x01020304);
  EXPECT_EQ(a.data[4], 0x04);
  EXPECT_EQ(a.data[7], 0x01);
  EXPECT_EQ(a.get_int(1), 0x01020304);
  NDArray s = NDArray::zeros(DataType::Float(64), {});
  EXPECT_EQ(s.num_elements(), 1);
  EXPECT_EQ(error_of([] { NDArray::zeros(DataType::Int(8), {2, -3}); }), "negative extent -3 in tensor shape");
}

TEST(NDArray, IntegerTypesWrapAndExtend) {
  NDArray i8 = NDArray::zeros(DataType::Int(8), {1});
  i8.set_int(0, 200);
  EXPECT_EQ(i8.get_int(0), -56);
  NDArray u8 = NDArray::zeros(DataType::UInt(8), {1});
  u8.set_int(0, -1);
  EXPECT_EQ(u8.get_int(0), 255);
  NDArray u64 = NDArray::zeros(DataType::UInt(64), {1});
  u64.set_int(0, -1);
  EXPECT_EQ(static_cast<uint64_t>(u64.get_int(0)), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(u64.get_float(0), 18446744073709551615.0);
  NDArray i16 = NDArray::zeros(DataType::Int(16), {1});
  i16.set_int(0, -32768);
  EXPECT_EQ(i16.get_int(0), -32768);
  NDArray b = NDArray::zeros(DataType::Bool(), {2});
  b.set_int(0, 7);
  EXPECT_EQ(b.get_int(0), 1);
  EXPECT_EQ(b.data[0], 1);
  EXPECT_EQ(b.get_int(1), 0);
}

TEST(NDArray, FloatTypesRoundToTheirPrecision) {
  NDArray f32 = NDArray::zeros(DataType::Float(32), {1});
  f32.set_float(0, 0.1);
  EXPECT_EQ(f32.get_float(0), static_cast<double>(0.1f));
  NDArray f16 = NDArray::zeros(DataType::Float(16), {1});
  f16.set_float(0, 0.1);
  EXPECT_EQ(f16.get_float(0), half_to_float(float_to_half(0.1)));
  EXPECT_EQ(f16.data[0] | (f16.data[1] << 8), 0x2e66);
  NDArray f64 = NDArray::zeros(DataType::Float(64), {1});
  f64.set_float(0, -0.0);
  EXPECT_TRUE(std::signbit(f64.get_float(0)));
  f32.set_int(0, 16777217);  // int -> float32 rounds once
  EXPECT_EQ(f32.get_float(0), 16777216.0);
}

// ---- .npy -------------------------------------------------------------------------

NDArray sample(DataType t) {
  NDArray a = NDArray::zeros(t, {2, 3});
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    if (t.is_float()) a.set_float(i, -1.5 + 0.75 * static_cast<double>(i));
    else a.set_int(i, t.is_bool() ? i % 2 : (i * 37) - 60);
  }
  return a;
}

TEST(Npy, RoundTripEveryDtype) {
  const DataType types[] = {DataType::Bool(),   DataType::Int(8),    DataType::Int(16),   DataType::Int(32),
                            DataType::Int(64),  DataType::UInt(8),   DataType::UInt(16),  DataType::UInt(32),
                            DataType::UInt(64), DataType::Float(16), DataType::Float(32), DataType::Float(64)};
  for (DataType t : types) {
    SCOPED_TRACE(t.str());
    NDArray a = sample(t);
    std::string bytes = write_npy(a);
    ASSERT_EQ(bytes.compare(0, 6, "\x93NUMPY"), 0);
    EXPECT_EQ(bytes[6], 1);
    EXPECT_EQ(bytes[7], 0);
    size_t header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    EXPECT_EQ((10 + header_len) % 64, 0u);
    EXPECT_EQ(bytes[10 + header_len - 1], '\n');
    NDArray b = read_npy(bytes, "t.npy");
    EXPECT_EQ(b.dtype, a.dtype);
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.data, a.data);
  }
}

TEST(Npy, HeaderText) {
  std::string bytes = write_npy(sample(DataType::Float(32)));
  EXPECT_NE(bytes.find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"), std::string::npos);
  EXPECT_NE(write_npy(sample(DataType::Int(8))).find("'|i1'"), std::string::npos);
  EXPECT_NE(write_npy(sample(DataType::Bool())).find("'|b1'"), std::string::npos);
  EXPECT_NE(write_npy(sample(DataType::UInt(16))).find("'<u2'"), std::string::npos);
  EXPECT_NE(write_npy(sample(DataType::Float(16))).find("'<f2'"), std::string::npos);
}

TEST(Npy, ScalarAndVectorShapes) {
  NDArray s = NDArray::zeros(DataType::Float(64), {});
  s.set_float(0, 2.5);
  std::string bytes = write_npy(s);
  EXPECT_NE(bytes.find("'shape': ()"), std::string::npos);
  NDArray s2 = read_npy(bytes, "s.npy");
  EXPECT_TRUE(s2.shape.empty());
  EXPECT_EQ(s2.get_float(0), 2.5);

  NDArray v = NDArray::zeros(DataType::Int(32), {5});
  std::string vbytes = write_npy(v);
  EXPECT_NE(vbytes.find("'shape': (5,)"), std::string::npos);
  EXPECT_EQ(read_npy(vbytes, "v.npy").shape, std::vector<int64_t>{5});

  NDArray empty = NDArray::zeros(DataType::Float(32), {0, 4});
  NDArray e2 = read_npy(write_npy(empty), "e.npy");
  EXPECT_EQ(e2.shape, (std::vector<int64_t>{0, 4}));
  EXPECT_TRUE(e2.data.empty());
}

TEST(Npy, Version2And3Headers) {
  std::string data = float32_bytes({1.0f, 2.0f, 3.0f});
  for (int major : {2, 3}) {
    NDArray a = read_npy(make_npy(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", data), "v.npy");
    EXPECT_EQ(a.dtype, DataType::Float(32));
    EXPECT_EQ(a.shape, std::vector<int64_t>{3});
    EXPECT_EQ(a.get_float(2), 3.0);
  }
}

TEST(Npy, HeaderSyntaxVariants) {
  std::string data = float32_bytes({1.0f, 2.0f});
  // Other key order, double quotes, no trailing comma, '=' and '|' byte orders.
  NDArray a = read_npy(make_npy(1, "{\"shape\": (1, 2), \"fortran_order\": False, \"descr\": \"=f4\"}", data), "x");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(a.get_float(1), 2.0);
  NDArray b = read_npy(make_npy(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }", "\x05\xff"), "x");
  EXPECT_EQ(b.dtype, DataType::UInt(8));
  EXPECT_EQ(b.get_int(1), 255);
  NDArray c = read_npy(make_npy(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", std::string(8, '\xff')), "x");
  EXPECT_EQ(c.get_int(0), -1);
}

TEST(Npy, BadMagic) {
  EXPECT_EQ(error_of([] { read_npy("not an npy file", "junk.npy"); }), "junk.npy: not a .npy file (bad magic)");
  EXPECT_EQ(error_of([] { read_npy("", "empty.npy"); }), "empty.npy: not a .npy file (bad magic)");
}

TEST(Npy, Truncated) {
  std::string good = make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", float32_bytes({1, 2}));
  EXPECT_EQ(error_of([&] { read_npy(good.substr(0, 7), "t.npy"); }), "t.npy: truncated header");
  EXPECT_EQ(error_of([&] { read_npy(good.substr(0, 9), "t.npy"); }), "t.npy: truncated header");
  EXPECT_EQ(error_of([&] { read_npy(good.substr(0, 40), "t.npy"); }), "t.npy: truncated header");
  // Header cut short inside the dict: not truncated by length, but malformed.
  std::string broken = make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,", "");
  EXPECT_NE(error_of([&] { read_npy(broken, "t.npy"); }).find("t.npy: malformed header"), std::string::npos);
  EXPECT_NE(error_of([&] { read_npy(make_npy(1, "{'descr': '<f4', 'shape': (2,), }", float32_bytes({1, 2})), "t.npy"); })
                .find("missing 'fortran_order'"),
            std::string::npos);
}

TEST(Npy, FortranOrderRejected) {
  std::string f = make_npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", float32_bytes({1, 2}));
  EXPECT_NE(error_of([&] { read_npy(f, "f.npy"); }).find("f.npy: Fortran-order"), std::string::npos);
}

TEST(Npy, BigEndianRejected) {
  std::string f = make_npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", float32_bytes({1, 2}));
  std::string msg = error_of([&] { read_npy(f, "be.npy"); });
  EXPECT_NE(msg.find("be.npy: big-endian"), std::string::npos) << msg;
  // One-byte types have no byte order, so '>i1' is the same data as '|i1'.
  NDArray a = read_npy(make_npy(1, "{'descr': '>i1', 'fortran_order': False, 'shape': (1,), }", "\xfe"), "x");
  EXPECT_EQ(a.get_int(0), -2);
}

TEST(Npy, UnsupportedDtype) {
  for (const char* descr : {"<c8", "<f3", "<i3", "|b2", "<U4", "O", "<M8"}) {
    std::string f = make_npy(1, std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (1,), }",
                             std::string(8, '\0'));
    EXPECT_EQ(error_of([&] { read_npy(f, "d.npy"); }), std::string("d.npy: unsupported dtype '") + descr + "'");
  }
  std::string structured = make_npy(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", "");
  EXPECT_NE(error_of([&] { read_npy(structured, "s.npy"); }).find("s.npy: malformed header"), std::string::npos);
}

TEST(Npy, DataSizeMismatch) {
  const char* header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  std::string shorter = make_npy(1, header, float32_bytes({1, 2}));
  std::string longer = make_npy(1, header, float32_bytes({1, 2, 3, 4}));
  EXPECT_EQ(error_of([&] { read_npy(shorter, "m.npy"); }),
            "m.npy: data size mismatch: shape and dtype need 12 bytes but the file holds 8");
  EXPECT_EQ(error_of([&] { read_npy(longer, "m.npy"); }),
            "m.npy: data size mismatch: shape and dtype need 12 bytes but the file holds 16");
}

TEST(Npy, UnsupportedVersion) {
  std::string f = make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", float32_bytes({1}));
  f[6] = 9;
  EXPECT_EQ(error_of([&] { read_npy(f, "v.npy"); }), "v.npy: unsupported .npy format version 9.0");
}

TEST(Npy, ReadsBundledExample) {
  std::ifstream in(std::string(mtir::source_dir()) + "/examples/matmul_A.npy", std::ios::binary);
  ASSERT_TRUE(in) << "examples/matmul_A.npy missing";
  std::stringstream ss;
  ss << in.rdbuf();
  NDArray a = read_npy(ss.str(), "matmul_A.npy");
  EXPECT_EQ(a.dtype, DataType::Float(32));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(a.data.size(), 4u * 8u * 4u);
  for (int64_t i = 0; i < a.num_elements(); ++i) EXPECT_TRUE(std::isfinite(a.get_float(i)));
  // Writing it back gives a file that reads the same.
  NDArray b = read_npy(write_npy(a), "again.npy");
  EXPECT_EQ(b.data, a.data);
}

}  // namespace
}  // namespace mtir
