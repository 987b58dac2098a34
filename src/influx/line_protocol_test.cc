#include "influx/line_protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainwatch::influx {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using Type = FieldValue::Type;

ParsedBody Parse(std::string_view body, Precision p = Precision::kNanoseconds) {
  return ParseLineProtocol(body, p);
}

// The reason a single bad line is refused.
std::string Why(std::string_view line) {
  ParsedBody parsed = Parse(line);
  EXPECT_TRUE(parsed.points.empty()) << line;
  return parsed.errors.empty() ? "" : parsed.errors[0].message;
}

TEST(LineProtocolTest, TheGrafanaExampleAndTelegrafsGpuLine) {
  ParsedBody parsed = Parse(
      "training_metrics,metric_name=loss,run=r1 value=0.25,step=100i 1700000000000000000\n"
      "nvidia_smi,host=gpu1,index=0,name=NVIDIA\\ A100 utilization_gpu=87i,memory_used=30000i,"
      "temperature_gpu=71i,fan_speed=\"n/a\" 1700000000000000000\n");
  ASSERT_TRUE(parsed.errors.empty()) << parsed.errors[0].message;
  ASSERT_EQ(parsed.points.size(), 2u);
  const Point& a = parsed.points[0];
  EXPECT_EQ(a.measurement, "training_metrics");
  EXPECT_THAT(a.tags, ElementsAre(Pair("metric_name", "loss"), Pair("run", "r1")));
  ASSERT_EQ(a.fields.size(), 2u);
  EXPECT_EQ(a.fields[0].first, "value");
  EXPECT_EQ(a.fields[0].second.type, Type::kFloat);
  EXPECT_EQ(a.fields[0].second.f, 0.25);
  EXPECT_EQ(a.fields[1].second.type, Type::kInteger);
  EXPECT_EQ(a.fields[1].second.i, 100);
  EXPECT_EQ(a.timestamp_ns, 1700000000000000000);
  EXPECT_EQ(a.line, 1u);
  const Point& b = parsed.points[1];
  EXPECT_THAT(b.tags,
              ElementsAre(Pair("host", "gpu1"), Pair("index", "0"), Pair("name", "NVIDIA A100")));
  EXPECT_EQ(b.fields[3].second.type, Type::kString);
  EXPECT_EQ(b.fields[3].second.s, "n/a");
  EXPECT_EQ(b.line, 2u);
}

TEST(LineProtocolTest, EveryFieldType) {
  ParsedBody parsed =
      Parse("m f=-1.5e3,i=-42i,u=42u,t=t,T=TRUE,f2=false,F=F,s=\"a \\\"q\\\" \\\\ b\",g=1,h=.5");
  ASSERT_TRUE(parsed.errors.empty()) << parsed.errors[0].message;
  const auto& f = parsed.points.at(0).fields;
  ASSERT_EQ(f.size(), 10u);
  EXPECT_EQ(f[0].second.f, -1500.0);
  EXPECT_EQ(f[1].second.i, -42);
  EXPECT_EQ(f[2].second.u, 42u);
  EXPECT_TRUE(f[3].second.b);
  EXPECT_TRUE(f[4].second.b);
  EXPECT_FALSE(f[5].second.b);
  EXPECT_FALSE(f[6].second.b);
  EXPECT_EQ(f[6].second.type, Type::kBoolean);
  EXPECT_EQ(f[7].second.s, "a \"q\" \\ b");
  EXPECT_EQ(f[8].second.type, Type::kFloat) << "a bare number is a float";
  EXPECT_EQ(f[9].second.f, 0.5);
  EXPECT_FALSE(parsed.points[0].timestamp_ns.has_value());
}

TEST(LineProtocolTest, Escapes) {
  ParsedBody parsed = Parse("my\\ meas\\,ure=x,t\\=k\\ ey=v\\,a\\=l\\ ue f\\ i\\=e\\,ld=1 5");
  ASSERT_TRUE(parsed.errors.empty()) << parsed.errors[0].message;
  const Point& p = parsed.points[0];
  EXPECT_EQ(p.measurement, "my meas,ure=x") << "'=' needs no escape in a measurement";
  EXPECT_THAT(p.tags, ElementsAre(Pair("t=k ey", "v,a=l ue")));
  EXPECT_EQ(p.fields[0].first, "f i=e,ld");
  // A backslash before anything else is kept, as InfluxDB keeps it.
  parsed = Parse("m,path=C:\\dir f=1");
  ASSERT_TRUE(parsed.errors.empty());
  EXPECT_THAT(parsed.points[0].tags, ElementsAre(Pair("path", "C:\\dir")));
}

TEST(LineProtocolTest, PrecisionScalesTimestamps) {
  EXPECT_EQ(Parse("m f=1 3", Precision::kSeconds).points[0].timestamp_ns, 3000000000);
  EXPECT_EQ(Parse("m f=1 3", Precision::kMilliseconds).points[0].timestamp_ns, 3000000);
  EXPECT_EQ(Parse("m f=1 3", Precision::kMicroseconds).points[0].timestamp_ns, 3000);
  EXPECT_EQ(Parse("m f=1 2", Precision::kMinutes).points[0].timestamp_ns, 120000000000);
  EXPECT_EQ(Parse("m f=1 1", Precision::kHours).points[0].timestamp_ns, 3600000000000);
  EXPECT_EQ(Parse("m f=1 -5").points[0].timestamp_ns, -5);
  EXPECT_THAT(ParseLineProtocol("m f=1 9223372036854775", Precision::kSeconds).errors.at(0).message,
              HasSubstr("time outside range"));
  for (std::string_view p : {"", "n", "ns", "u", "us", "ms", "s", "m", "h"}) {
    EXPECT_TRUE(ParsePrecision(p).ok()) << p;
  }
  EXPECT_THAT(ParsePrecision("d").status().message(), HasSubstr("invalid precision 'd'"));
}

TEST(LineProtocolTest, BadLinesAreNamedAndTheOthersKept) {
  ParsedBody parsed = Parse(
      "# a comment\n"
      "\n"
      "good f=1 1\n"
      "bad f=x 2\n"
      "   \r\n"
      "also_good,t=1 f=2i 3\r\n");
  ASSERT_EQ(parsed.points.size(), 2u);
  EXPECT_EQ(parsed.points[0].line, 3u);
  EXPECT_EQ(parsed.points[1].line, 6u);
  EXPECT_EQ(parsed.points[1].timestamp_ns, 3) << "CRLF line ends are accepted";
  ASSERT_EQ(parsed.errors.size(), 1u);
  EXPECT_EQ(parsed.errors[0].line, 4u);
  EXPECT_EQ(parsed.errors[0].message, "unable to parse 'bad f=x 2': invalid number");
}

TEST(LineProtocolTest, ReasonsInInfluxDbsWords) {
  EXPECT_THAT(Why("m"), HasSubstr("missing fields"));
  EXPECT_THAT(Why("m "), HasSubstr("missing fields"));
  EXPECT_THAT(Why(",t=1 f=1"), HasSubstr("missing measurement"));
  EXPECT_THAT(Why("m,=1 f=1"), HasSubstr("missing tag key"));
  EXPECT_THAT(Why("m,t= f=1"), HasSubstr("missing tag value"));
  EXPECT_THAT(Why("m,t f=1"), HasSubstr("missing tag value"));
  EXPECT_THAT(Why("m =1"), HasSubstr("missing field key"));
  EXPECT_THAT(Why("m f="), HasSubstr("missing field value"));
  EXPECT_THAT(Why("m f"), HasSubstr("missing field value"));
  EXPECT_THAT(Why("m f=1,"), HasSubstr("missing field key"));
  EXPECT_THAT(Why("m f=1x"), HasSubstr("invalid number"));
  EXPECT_THAT(Why("m f=nan"), HasSubstr("invalid number"));
  EXPECT_THAT(Why("m f=inf"), HasSubstr("invalid number"));
  EXPECT_THAT(Why("m f=1.5i"), HasSubstr("invalid number"));
  EXPECT_THAT(Why("m f=i"), HasSubstr("invalid number"));
  EXPECT_THAT(Why("m f=-1u"), HasSubstr("invalid unsigned number"));
  EXPECT_THAT(Why("m f=9223372036854775808i"), HasSubstr("value out of range"));
  EXPECT_THAT(Why("m f=1e999"), HasSubstr("value out of range"));
  EXPECT_THAT(Why("m f=tru"), HasSubstr("invalid boolean"));
  EXPECT_THAT(Why("m f=\"abc"), HasSubstr("unbalanced quotes"));
  EXPECT_THAT(Why("m f=\"a\"b"), HasSubstr("invalid field format"));
  EXPECT_THAT(Why("m f=1 12x"), HasSubstr("bad timestamp"));
  EXPECT_THAT(Why("m f=1 1 2"), HasSubstr("invalid timestamp"));
  EXPECT_THAT(Why("m,t=a=b f=1"), HasSubstr("invalid tag format"));
}

TEST(LineProtocolTest, RepeatedFieldKeepsTheLastValue) {
  ParsedBody parsed = Parse("m f=1,g=2,f=3");
  ASSERT_EQ(parsed.points.at(0).fields.size(), 2u);
  EXPECT_EQ(parsed.points[0].fields[0].second.f, 3.0);
}

TEST(LineProtocolTest, UnescapedTextOutlivesAMove) {
  ParsedBody moved;
  {
    ParsedBody parsed = Parse("a\\ b f=\"x\\\"y\"");
    moved = std::move(parsed);
  }
  ASSERT_EQ(moved.points.size(), 1u);
  EXPECT_EQ(moved.points[0].measurement, "a b");
  EXPECT_EQ(moved.points[0].fields[0].second.s, "x\"y");
}

}  // namespace
}  // namespace trainwatch::influx
