#include "api/content_coding.h"

#include <gtest/gtest.h>

#include <string>

#include "influx/gzip.h"

namespace trainwatch::api {
namespace {

std::string HeaderOf(const HttpResponse& r, const std::string& name) {
  for (const auto& [n, v] : r.headers) {
    if (n == name) return v;
  }
  return "";
}

// A JSON answer shaped like a rank matrix: numbers, repetitive keys.
HttpResponse LargeJson() {
  std::string body = "{\"ranks\":[";
  for (int r = 0; r < 200; ++r) {
    body += (r ? ",{\"rank\":" : "{\"rank\":") + std::to_string(r) + ",\"mean\":[";
    for (int i = 0; i < 50; ++i) body += (i ? "," : "") + std::to_string(0.5 + r * 0.001 + i);
    body += "]}";
  }
  body += "]}";
  return HttpResponse::Json(200, body);
}

TEST(AcceptsGzipTest, FollowsQualityValuesAndTheWildcard) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("gzip, deflate, br"));
  EXPECT_TRUE(AcceptsGzip("br;q=1.0, GZIP;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_TRUE(AcceptsGzip("x-gzip"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("identity"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0.000, *"));
  EXPECT_FALSE(AcceptsGzip("*;q=0"));
  EXPECT_FALSE(AcceptsGzip("br, deflate"));
}

TEST(GzipAnswerTest, ALargeJsonAnswerIsCompressedAndInflatesToTheSameBytes) {
  HttpResponse r = LargeJson();
  const std::string original = r.body;
  ASSERT_GE(original.size(), kGzipMinBytes);
  GzipAnswer(&r);
  EXPECT_EQ(HeaderOf(r, "Content-Encoding"), "gzip");
  EXPECT_EQ(HeaderOf(r, "Vary"), "Accept-Encoding");
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_LT(r.body.size(), original.size() / 2);
  auto inflated = influx::Gunzip(r.body, original.size());
  ASSERT_TRUE(inflated.ok()) << inflated.status().ToString();
  EXPECT_EQ(*inflated, original);
}

TEST(GzipAnswerTest, LeavesWhatIsSmallBinaryStreamedEncodedValidatedOrNotOk) {
  auto unchanged = [](HttpResponse r, const char* why) {
    const std::string before = r.body;
    const size_t headers = r.headers.size();
    GzipAnswer(&r);
    EXPECT_EQ(r.body, before) << why;
    EXPECT_EQ(r.headers.size(), headers) << why;
  };
  unchanged(HttpResponse::Json(200, "{\"ok\":true}"), "small");
  HttpResponse binary = LargeJson();
  binary.content_type = "image/png";
  unchanged(binary, "not text");
  HttpResponse error = LargeJson();
  error.status = 400;
  unchanged(error, "not a 200");
  HttpResponse encoded = LargeJson();
  encoded.headers.emplace_back("Content-Encoding", "snappy");
  unchanged(encoded, "already encoded");
  HttpResponse validated = LargeJson();
  validated.headers.emplace_back("ETag", "\"v1\"");
  unchanged(validated, "has an ETag for its identity coding");
  HttpResponse streamed = LargeJson();
  streamed.stream = [](std::string*) { return StreamStep::kDone; };
  unchanged(streamed, "streamed");
}

}  // namespace
}  // namespace trainwatch::api
