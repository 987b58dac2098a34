#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "report/report.h"
#include "report/report_html.h"
#include "report/svg_chart.h"

namespace trainwatch::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

query::Bucket MakeBucket(uint32_t index, double lo, double hi, uint64_t count = 2) {
  query::Bucket b;
  b.index = index;
  b.count = count;
  b.min = lo;
  b.max = hi;
  b.sum = (lo + hi) / 2 * static_cast<double>(count);
  b.first = lo;
  b.last = hi;
  b.first_step = index * 10;
  b.last_step = index * 10 + 9;
  return b;
}

TEST(MetricDirection, LossesDownAccuraciesUp) {
  EXPECT_EQ(MetricDirection("train/loss"), -1);
  EXPECT_EQ(MetricDirection("val_error"), -1);
  EXPECT_EQ(MetricDirection("val/accuracy"), 1);
  EXPECT_EQ(MetricDirection("lr"), 0);
}

TEST(ConfigTable, FlattensAndMarksDifferences) {
  nlohmann::json a = {{"lr", 0.1}, {"model", {{"depth", 4}, {"act", "relu"}}}, {"seeds", {1, 2}}};
  nlohmann::json b = {{"lr", 0.5}, {"model", {{"depth", 4}}}, {"extra", true}, {"seeds", {1, 2}}};
  std::vector<ConfigRow> rows = ConfigTable({&a, &b});
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].path, "extra");
  EXPECT_FALSE(rows[0].values[0].has_value());
  EXPECT_TRUE(rows[0].differs);
  EXPECT_EQ(rows[1].path, "lr");
  EXPECT_EQ(*rows[1].values[1], "0.5");
  EXPECT_TRUE(rows[1].differs);
  EXPECT_EQ(rows[2].path, "model.act");
  EXPECT_TRUE(rows[2].differs);
  EXPECT_EQ(rows[3].path, "model.depth");
  EXPECT_FALSE(rows[3].differs);
  EXPECT_EQ(rows[4].path, "seeds");  // arrays stay whole
  EXPECT_EQ(*rows[4].values[0], "[1,2]");
  EXPECT_FALSE(rows[4].differs);
}

TEST(EnvelopeSvg, DrawsEachBucketsMinToMaxAndEscapes) {
  Chart chart;
  chart.metric = "loss<script>";
  chart.grid = {0, 40, 4};
  chart.series.push_back({"r1", {MakeBucket(0, 1, 2), MakeBucket(1, 0.5, 3)}});
  query::Bucket nan;
  nan.index = 3;
  nan.count = 1;
  nan.nan_count = 1;
  chart.series[0].buckets.push_back(nan);
  chart.marks = {15};
  const std::string svg = EnvelopeSvg(chart);
  EXPECT_THAT(svg, HasSubstr("class=\"band\""));
  EXPECT_THAT(svg, HasSubstr("class=\"mean\""));
  EXPECT_THAT(svg, HasSubstr("class=\"mark\""));
  EXPECT_THAT(svg, HasSubstr("<title>NaN</title>"));
  EXPECT_THAT(svg, HasSubstr("loss&lt;script&gt;"));
  EXPECT_THAT(svg, Not(HasSubstr("<script>")));
}

TEST(EnvelopeSvg, SaysWhenThereIsNothingToDraw) {
  Chart chart;
  chart.metric = "x";
  EXPECT_THAT(EnvelopeSvg(chart), HasSubstr("no finite values"));
}

TEST(RenderReportHtml, HasEverySectionAndNoExternalReference) {
  Report r;
  r.request.project = "p";
  r.request.run = "r1";
  r.run.info.project = "p";
  r.run.info.id = "r1";
  r.run.info.name = "<img src=x onerror=alert(1)>";
  r.run.info.status = storage::RunStatus::kFinished;
  r.run.info.config = {{"lr", 0.1}};
  r.run.duration = 125;
  r.run.has_steps = true;
  r.run.last_step = 100;
  r.run.steps_per_second = 0.8;
  MetricStats loss;
  loss.name = "loss";
  loss.count = 10;
  loss.min = 0.1;
  loss.max = 2;
  loss.min_step = 90;
  loss.direction = -1;
  loss.has_final = true;
  loss.final_value = 0.2;
  r.metrics.push_back(loss);
  r.phases.push_back({"forward", 0.01, 1.0, 100});
  r.phases.push_back({"step", 0.02, 2.0, 100});
  Chart chart;
  chart.metric = "loss";
  chart.grid = {0, 100, 2};
  chart.series.push_back({"r1", {MakeBucket(0, 1, 2), MakeBucket(1, 0.1, 1)}});
  r.charts.push_back(chart);
  AlertEntry alert;
  alert.alert.id = 7;
  alert.alert.kind = "nan";
  alert.alert.metric = "loss";
  alert.alert.step = 50;
  alert.alert.severity = "critical";
  alert.alert.annotations["observed"] = "NaN";
  alert.evidence = chart;
  r.alerts.push_back(alert);
  nlohmann::json other = {{"lr", 0.5}};
  RunSummary compared;
  compared.info.id = "r2";
  compared.info.config = other;
  r.compared.push_back(compared);
  r.config = ConfigTable({&r.run.info.config, &other});
  SystemStat gpu;
  gpu.name = "system/gpu/0/utilization_percent";
  gpu.utilisation = true;
  gpu.count = 5;
  gpu.mean = 40;
  gpu.idle = {{0, 10}};
  gpu.idle_seconds = 10;
  r.system.push_back(gpu);

  const std::string html = RenderReportHtml(r);
  for (const char* section : {"summary", "charts", "alerts", "config", "system"}) {
    EXPECT_THAT(html, HasSubstr("data-section=\"" + std::string(section) + "\"")) << section;
  }
  EXPECT_THAT(html, HasSubstr("data-testid=\"config-diff\""));
  EXPECT_THAT(html, HasSubstr("data-alert-id=\"7\""));
  EXPECT_THAT(html, HasSubstr("2m 05s"));
  EXPECT_THAT(html, HasSubstr("&lt;img src=x onerror=alert(1)&gt;"));
  EXPECT_THAT(html, Not(HasSubstr("<img")));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("http://")));
  EXPECT_THAT(html, Not(HasSubstr("https://")));
}

TEST(RenderReportHtml, RanksSectionOnlyForDistributedRuns) {
  Report r;
  r.run.info.id = "job";
  EXPECT_THAT(RenderReportHtml(r), Not(HasSubstr("data-section=\"ranks\"")));
  r.world_size = 2;
  r.rank_metrics = {"time/step"};
  r.ranks.push_back({0, "node-a", 100, 2.5, 0, "running", {0.1}, {0.3}});
  r.ranks.push_back({1, "node-b", 90, 2.0, 10, "dead", {std::nullopt}, {std::nullopt}});
  const std::string html = RenderReportHtml(r);
  EXPECT_THAT(html, HasSubstr("data-section=\"ranks\""));
  EXPECT_THAT(
      html, HasSubstr("<tr data-rank=\"1\"><td class=\"num\">1</td><td>node-b</td><td>dead</td>"));
  EXPECT_THAT(html, HasSubstr("time/step mean"));
}

TEST(FormatDuration, Units) {
  EXPECT_EQ(FormatDuration(4.25), "4.25 s");
  EXPECT_EQ(FormatDuration(125), "2m 05s");
  EXPECT_EQ(FormatDuration(3723), "1h 02m 03s");
}

}  // namespace
}  // namespace trainwatch::report
