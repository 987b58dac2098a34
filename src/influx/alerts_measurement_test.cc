#include "influx/alerts_measurement.h"

#include <gtest/gtest.h>

#include "influx/influxql_parser.h"

namespace trainwatch::influx {
namespace {

using Json = nlohmann::json;

constexpr int64_t kSec = 1'000'000'000;

std::vector<AlertEvent> Events() {
  AlertEvent a;
  a.time_ns = 100 * kSec;
  a.tags = {{"project", "p"}, {"run", "r1"},      {"severity", "critical"}, {"kind", "nan"},
            {"name", "nan"},  {"metric", "loss"}, {"status", "firing"}};
  a.text = "loss is NaN";
  a.title = "nan on r1";
  a.step = 7;
  AlertEvent b = a;
  b.time_ns = 50 * kSec;
  b.tags["run"] = "r2";
  b.tags["status"] = "resolved";
  b.end_ms = 60'000;
  b.title = "nan on r2";
  return {a, b};
}

Result<Json> SelectQ(const std::string& q, std::vector<std::string>* asked = nullptr) {
  Result<std::vector<ql::Statement>> parsed = ql::ParseInfluxQL(q);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  const auto& select = std::get<ql::SelectStatement>(parsed->at(0));
  EXPECT_TRUE(SelectsAlerts(select));
  AlertSource source = [asked](const std::string& project) -> Result<std::vector<AlertEvent>> {
    if (asked) asked->push_back(project);
    return Events();
  };
  return SelectAlerts(select, "p", 1000 * kSec, source,
                      [](int64_t ns) { return Json(ns / 1000000); });
}

TEST(AlertsMeasurementTest, RawSelectInTimeOrderWithTagFilters) {
  std::vector<std::string> asked;
  Result<Json> all = SelectQ(
      "SELECT \"text\", \"title\", \"time_end\", \"run\" FROM \"trainwatch_alerts\"", &asked);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(asked, std::vector<std::string>{"p"});
  EXPECT_EQ((*all)[0]["name"], "trainwatch_alerts");
  EXPECT_EQ((*all)[0]["columns"], Json::parse(R"(["time","text","title","time_end","run"])"));
  EXPECT_EQ((*all)[0]["values"], Json::parse(R"([[50000,"loss is NaN","nan on r2",60000,"r2"],
                            [100000,"loss is NaN","nan on r1",null,"r1"]])"));

  Result<Json> r1 = SelectQ(
      "SELECT \"title\" AS t FROM trainwatch_alerts WHERE \"run\" =~ /^(r1)$/ AND time >= 10000ms");
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ((*r1)[0]["columns"], Json::parse(R"(["time","t"])"));
  EXPECT_EQ((*r1)[0]["values"], Json::parse(R"([[100000,"nan on r1"]])"));

  Result<Json> none = SelectQ("SELECT \"text\" FROM trainwatch_alerts WHERE time < 10000ms");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  Result<Json> desc = SelectQ("SELECT \"run\" FROM trainwatch_alerts ORDER BY time DESC LIMIT 1");
  ASSERT_TRUE(desc.ok());
  EXPECT_EQ((*desc)[0]["values"], Json::parse(R"([[100000,"r1"]])"));
}

TEST(AlertsMeasurementTest, StarAndRefusals) {
  Result<Json> star = SelectQ("SELECT * FROM trainwatch_alerts LIMIT 1");
  ASSERT_TRUE(star.ok());
  EXPECT_EQ((*star)[0]["columns"].size(), 13u);  // time, 5 fields, 7 tags
  Result<Json> aggregate = SelectQ("SELECT count(\"value\") FROM trainwatch_alerts");
  ASSERT_FALSE(aggregate.ok());
  EXPECT_NE(aggregate.status().message().find("raw SELECTs only"), std::string::npos);
  Result<Json> grouped = SelectQ("SELECT \"text\" FROM trainwatch_alerts GROUP BY time(1m)");
  EXPECT_FALSE(grouped.ok());
}

}  // namespace
}  // namespace trainwatch::influx
