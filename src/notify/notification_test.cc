#include "notify/notification.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "notify/testing/sample_notification.h"

namespace trainwatch::notify {
namespace {

using nlohmann::json;

TEST(NotificationJson, HasEveryFieldOfTheDocumentedSchema) {
  Notification n = test::SampleNotification();
  json j = json::parse(NotificationToJson(n));
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["alert_id"], "42");
  EXPECT_EQ(j["status"], "firing");
  EXPECT_EQ(j["project"], "vision-resnet");
  EXPECT_EQ(j["run"], "run-7");
  EXPECT_EQ(j["kind"], "grad_explosion");
  EXPECT_EQ(j["name"], "grad_explosion");
  EXPECT_EQ(j["metric"], "grad_norm");
  EXPECT_EQ(j["severity"], "critical");
  EXPECT_EQ(j["message"], n.message);
  EXPECT_EQ(j["step"], 1200);
  EXPECT_EQ(j["value"], 40.25);
  EXPECT_EQ(j["time"], 1767225600.5);
  EXPECT_EQ(j["starts_at"], 1767225601.25);
  EXPECT_TRUE(j["ends_at"].is_null());  // firing
  EXPECT_EQ(j["labels"]["team"], "vision");
  EXPECT_EQ(j["annotations"]["runbook"], "https://wiki.example.com/grad");
  EXPECT_EQ(j["chart_url"], n.chart_url);
  EXPECT_EQ(j["idempotency_key"], n.idempotency_key);
}

TEST(NotificationJson, TheIdempotencyKeyIsTheIncidentsAndTheStatus) {
  const std::string incident = IncidentId("p\x1fr\x1fnan\x1fnan", 100);
  EXPECT_EQ(incident.size(), 32u);
  EXPECT_EQ(incident, IncidentId("p\x1fr\x1fnan\x1fnan", 100));  // no node-local input
  EXPECT_NE(incident, IncidentId("p\x1fr\x1fnan\x1fnan", 101));
  EXPECT_NE(incident, IncidentId("p\x1fr2\x1fnan\x1fnan", 100));
  EXPECT_EQ(IdempotencyKey(incident, "resolved"), incident + "-resolved");
  // Left out of the JSON when unknown (an outbox entry written before keys existed).
  Notification n = test::SampleNotification();
  n.idempotency_key.clear();
  EXPECT_FALSE(json::parse(NotificationToJson(n)).contains("idempotency_key"));
  auto back = NotificationFromJson(NotificationToJson(test::SampleNotification()));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->idempotency_key, test::SampleNotification().idempotency_key);
}

TEST(NotificationJson, RoundTripsExactly) {
  for (const char* status : {"firing", "resolved"}) {
    Notification n = test::SampleNotification("7", status);
    n.value = 0.1 + 0.2;  // needs all 17 digits
    Result<Notification> back = NotificationFromJson(NotificationToJson(n));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, n) << status;
  }
}

TEST(NotificationJson, NonFiniteNumbersAreNullAndReadBackAsNaN) {
  Notification n = test::SampleNotification();
  n.time = std::nan("");
  n.value = INFINITY;
  json j = json::parse(NotificationToJson(n));
  EXPECT_TRUE(j["time"].is_null());
  EXPECT_TRUE(j["value"].is_null());
  Result<Notification> back = NotificationFromJson(j.dump());
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(std::isnan(back->time));
  EXPECT_TRUE(std::isnan(back->value));
  EXPECT_EQ(back->ends_at, 0);
}

TEST(NotificationJson, RejectsMalformedInputNamingTheField) {
  EXPECT_EQ(NotificationFromJson("{").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NotificationFromJson("[1]").status().code(), StatusCode::kInvalidArgument);
  Result<Notification> bad = NotificationFromJson(R"({"step":"twelve"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("step"), std::string::npos);
  bad = NotificationFromJson(R"({"labels":{"a":1}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("labels.a"), std::string::npos);
}

TEST(NotificationJson, ARunReportCarriesItsLinkAndReadsBack) {
  Notification n = test::SampleNotification();
  n.kind = n.name = "run_report";
  n.labels = {{"run_status", "crashed"}};
  n.report_url = "http://tw:8080/api/v1/report/stored?project=vision-resnet&run=run-7";
  const std::string json = NotificationToJson(n);
  EXPECT_NE(
      json.find(
          R"("report_url":"http://tw:8080/api/v1/report/stored?project=vision-resnet&run=run-7")"),
      std::string::npos)
      << json;
  auto back = NotificationFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->report_url, n.report_url);
  EXPECT_TRUE(IsKnownKind("run_report"));
  EXPECT_EQ(Headline(n), "REPORT run vision-resnet/run-7 crashed");
  // Without a link, the key is left out.
  EXPECT_EQ(NotificationToJson(test::SampleNotification()).find("report_url"), std::string::npos);
}

TEST(Notification, SeverityKindAndHeadline) {
  EXPECT_EQ(ParseSeverity("warning"), Severity::kWarning);
  EXPECT_FALSE(ParseSeverity("fatal").has_value());
  EXPECT_TRUE(IsKnownKind("rule"));
  EXPECT_TRUE(IsKnownKind("throughput_drop"));
  EXPECT_FALSE(IsKnownKind("grad"));
  EXPECT_EQ(Headline(test::SampleNotification()),
            "FIRING critical grad_explosion in vision-resnet/run-7");
  EXPECT_EQ(Headline(test::SampleNotification("1", "resolved")),
            "RESOLVED critical grad_explosion in vision-resnet/run-7");
  EXPECT_EQ(FormatRfc3339(1767225601.25), "2026-01-01T00:00:01.250Z");
}

// Found by fuzzing (fuzz/outbox_segment): numbers read back from an outbox entry, and a record's
// own time (any finite number a client sent), were converted to integers beyond their range.
TEST(Notification, OutOfRangeNumbers) {
  EXPECT_EQ(FormatRfc3339(1e300), "9999-12-31T23:59:59.000Z");
  EXPECT_EQ(FormatRfc3339(-1e300), "0001-01-01T00:00:00.000Z");
  Result<Notification> bad = NotificationFromJson(R"({"step":1e300})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("step"), std::string::npos);
  EXPECT_EQ(NotificationFromJson(R"({"step":12.0})")->step, 12);
}

}  // namespace
}  // namespace trainwatch::notify
