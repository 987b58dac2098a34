#include "tfevents/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "tfevents/wire_writer.h"

namespace trainwatch::tfevents {
namespace {

std::string Shape(std::initializer_list<int64_t> dims) {
  std::string shape;
  WireWriter s(&shape);
  for (int64_t d : dims) {
    std::string dim;
    WireWriter(&dim).Int64(1, d);
    s.Bytes(2, dim);
  }
  return shape;
}

TEST(TensorTest, HalfAndBfloat16AreExact) {
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xc000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7c00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7e00)));
  EXPECT_EQ(Bfloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(Bfloat16ToFloat(0xc0a0), -5.0f);
}

TEST(TensorTest, ScalarFromEveryEncoding) {
  std::vector<double> scratch;
  auto decode = [&](const std::string& proto) {
    TensorView t;
    Status s = t.Decode(proto);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return TensorScalar(t, &scratch);
  };
  {  // float_val, packed
    std::string p;
    WireWriter w(&p);
    w.Int32(1, dtype::kFloat);
    w.Bytes(2, "");
    const float v[] = {0.1f};
    w.PackedFloats(5, v);
    EXPECT_EQ(*decode(p), double{0.1f});
  }
  {  // float_val, unpacked
    std::string p;
    WireWriter w(&p);
    w.Int32(1, dtype::kFloat);
    w.Float(5, -3.5f);
    EXPECT_EQ(*decode(p), -3.5);
  }
  {  // double_val
    std::string p;
    WireWriter w(&p);
    w.Int32(1, dtype::kDouble);
    w.Double(6, 0.1);
    EXPECT_EQ(*decode(p), 0.1);
  }
  {  // tensor_content, double
    std::string p;
    WireWriter w(&p);
    w.Int32(1, dtype::kDouble);
    double v = 1e-310;
    w.Bytes(4, std::string_view(reinterpret_cast<const char*>(&v), 8));
    EXPECT_EQ(*decode(p), 1e-310);
  }
  {  // half_val
    std::string p;
    WireWriter w(&p);
    w.Int32(1, dtype::kHalf);
    w.Varint(13, 0x3555);
    EXPECT_EQ(*decode(p), 0.333251953125);
  }
  {  // int64_val, negative
    std::string p;
    WireWriter w(&p);
    w.Int32(1, dtype::kInt64);
    w.Int64(10, -7);
    EXPECT_EQ(*decode(p), -7);
  }
  {  // rank 1 is not a scalar
    std::string p;
    WireWriter w(&p);
    w.Int32(1, dtype::kFloat);
    w.Bytes(2, Shape({1}));
    w.Float(5, 1);
    Result<double> r = decode(p);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("shape [1], expected rank 0"), std::string::npos);
  }
  {  // tensor_content of the wrong size
    std::string p;
    WireWriter w(&p);
    w.Int32(1, dtype::kFloat);
    w.Bytes(4, "abc");
    Result<double> r = decode(p);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("3 bytes"), std::string::npos);
  }
}

TEST(TensorTest, StringsFromStringValAndFromContent) {
  std::vector<std::string_view> strings;
  {
    std::string p;
    WireWriter w(&p);
    w.Int32(1, dtype::kString);
    w.Bytes(2, Shape({2}));
    w.Bytes(8, "a");
    w.Bytes(8, "bc");
    TensorView t;
    ASSERT_TRUE(t.Decode(p).ok());
    ASSERT_TRUE(StringValues(t, &strings).ok());
    EXPECT_EQ(strings, (std::vector<std::string_view>{"a", "bc"}));
  }
  {  // TensorFlow's string list: lengths first, then the bytes
    std::string content =
        "\x01\x03"
        "a"
        "xyz";
    std::string p;
    WireWriter w(&p);
    w.Int32(1, dtype::kString);
    w.Bytes(2, Shape({2}));
    w.Bytes(4, content);
    TensorView t;
    ASSERT_TRUE(t.Decode(p).ok());
    ASSERT_TRUE(StringValues(t, &strings).ok());
    EXPECT_EQ(strings, (std::vector<std::string_view>{"a", "xyz"}));
  }
}

TEST(TensorTest, MalformedBytesAreErrorsNotCrashes) {
  TensorView t;
  EXPECT_FALSE(t.Decode(std::string_view("\x0a\xff\xff", 3)).ok());  // length beyond the end
  EXPECT_FALSE(t.Decode(std::string_view("\x08", 1)).ok());          // truncated varint
  std::string deep;
  WireWriter w(&deep);
  w.Bytes(2, Shape({1, 1, 1, 1, 1, 1, 1, 1, 1}));
  EXPECT_NE(t.Decode(deep).message().find("rank over 8"), std::string::npos);
}

}  // namespace
}  // namespace trainwatch::tfevents
