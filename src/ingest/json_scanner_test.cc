#include "ingest/json_scanner.h"

#include <cmath>

#include <gtest/gtest.h>

namespace trainwatch::ingest {
namespace {

TEST(JsonScannerTest, ReadsNumbersIncludingPythonNonFiniteTokens) {
  struct Case {
    const char* text;
    double value;
    bool is_integer;
  };
  for (const Case& c : {Case{"0", 0, true}, Case{"-12", -12, true}, Case{"0.31", 0.31, false},
                        Case{"1e3", 1000, false}, Case{"-2.5E-3", -0.0025, false},
                        Case{"Infinity", INFINITY, false}, Case{"-Infinity", -INFINITY, false},
                        Case{"1e999", INFINITY, false}}) {
    JsonScanner s(c.text);
    double v;
    bool is_int;
    int64_t i;
    ASSERT_TRUE(s.ReadNumber(&v, &is_int, &i)) << c.text << ": " << s.error();
    EXPECT_EQ(v, c.value) << c.text;
    EXPECT_EQ(is_int, c.is_integer) << c.text;
    EXPECT_TRUE(s.AtEnd());
  }
  JsonScanner nan("NaN");
  double v;
  bool is_int;
  int64_t i;
  ASSERT_TRUE(nan.ReadNumber(&v, &is_int, &i));
  EXPECT_TRUE(std::isnan(v));
}

TEST(JsonScannerTest, RejectsMalformedNumbers) {
  for (const char* text : {"01", "-", "1.", ".5", "1e", "+1", "nan", "inf", "0x10"}) {
    JsonScanner s(text);
    double v;
    bool is_int;
    int64_t i;
    bool ok = s.ReadNumber(&v, &is_int, &i) && s.AtEnd();
    EXPECT_FALSE(ok) << text;
  }
}

TEST(JsonScannerTest, DecodesEscapesAndSurrogatePairs) {
  JsonScanner s(R"("a\"b\\c\n\u00e9\ud83d\ude00")");
  std::string out;
  ASSERT_TRUE(s.ReadString(&out)) << s.error();
  EXPECT_EQ(out, "a\"b\\c\n\xc3\xa9\xf0\x9f\x98\x80");
}

TEST(JsonScannerTest, RejectsBadStrings) {
  for (const char* text : {R"("abc)", "\"a\x01\"", R"("\ud800")", R"("\x")", R"("\u12")",
                           "\"\xff\xfe\"", "\"\xc0\xaf\""}) {
    JsonScanner s(text);
    std::string out;
    EXPECT_FALSE(s.ReadString(&out)) << text;
    EXPECT_FALSE(s.error().empty());
  }
}

TEST(JsonScannerTest, SkipsNestedValuesButBoundsDepth) {
  JsonScanner ok(R"({"a": [1, {"b": null}, true, "x"], "c": {}})");
  std::string_view raw;
  ASSERT_TRUE(ok.SkipValue(&raw)) << ok.error();
  EXPECT_TRUE(ok.AtEnd());
  std::string deep(10000, '[');
  JsonScanner bad(deep);
  EXPECT_FALSE(bad.SkipValue(&raw));
  EXPECT_NE(bad.error().find("deep"), std::string::npos);
}

TEST(Utf8Test, AcceptsValidAndRejectsInvalid) {
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(IsValidUtf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\x80"));
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));          // truncated
}

}  // namespace
}  // namespace trainwatch::ingest
