#include "influx/point_mapping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainwatch::influx {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr double kNow = 1767225600.5;

MappedPoints Map(std::string_view body, Precision precision = Precision::kNanoseconds) {
  static std::vector<std::unique_ptr<ParsedBody>> keep;  // the views must outlive the mapping
  keep.push_back(std::make_unique<ParsedBody>(ParseLineProtocol(body, precision)));
  EXPECT_TRUE(keep.back()->errors.empty()) << keep.back()->errors[0].message;
  return MapPoints(*keep.back(), "training", kNow);
}

const v1::MetricColumn* Column(const v1::RunBatch& b, const std::string& name) {
  for (const auto& c : b.metrics()) {
    if (c.name() == name) return &c;
  }
  return nullptr;
}

TEST(PointMappingTest, GrafanaTrainingOverviewLayout) {
  MappedPoints m =
      Map("training_metrics,metric_name=loss,run=r1 value=0.5,step=100i 1700000000000000000\n"
          "training_metrics,metric_name=accuracy,run=r1 value=0.7,step=100i 1700000000000000000\n"
          "training_metrics,metric_name=loss,run=r1 value=0.4,step=101i 1700000001000000000\n"
          "training_metrics,metric_name=loss,run=r2 value=0.9,step=5i\n");
  EXPECT_TRUE(m.errors.empty());
  EXPECT_EQ(m.points, 4u);
  ASSERT_EQ(m.request.runs_size(), 2);
  const v1::RunBatch& r1 = m.request.runs(0);
  EXPECT_EQ(r1.project(), "training");
  EXPECT_EQ(r1.run(), "r1");
  EXPECT_FALSE(r1.sampled());
  EXPECT_THAT(r1.steps(), ElementsAre(100, 101)) << "one row per step";
  EXPECT_THAT(r1.times(), ElementsAre(1700000000.0, 1700000001.0));
  const v1::MetricColumn* loss = Column(r1, "loss");
  ASSERT_NE(loss, nullptr);
  EXPECT_THAT(loss->rows(), ElementsAre()) << "a value at every row: dense";
  EXPECT_THAT(loss->values(), ElementsAre(0.5, 0.4));
  const v1::MetricColumn* accuracy = Column(r1, "accuracy");
  ASSERT_NE(accuracy, nullptr);
  EXPECT_THAT(accuracy->rows(), ElementsAre(0));
  EXPECT_EQ(m.request.runs(1).run(), "r2");
  EXPECT_THAT(m.request.runs(1).times(), ElementsAre(kNow)) << "no timestamp: the time of receipt";
}

TEST(PointMappingTest, TelegrafMeasurementsAreSamplesOfTheHost) {
  MappedPoints m =
      Map("nvidia_smi,host=gpu1,index=0,name=A100 utilization_gpu=87i,pstate=\"P0\" 1700000000000\n"
          "nvidia_smi,host=gpu1,index=1,name=A100 utilization_gpu=12i 1700000000000\n"
          "cpu,cpu=cpu-total,host=gpu1 usage_idle=93.5,ok=true 1700000000001\n",
          Precision::kMilliseconds);
  EXPECT_TRUE(m.errors.empty());
  ASSERT_EQ(m.request.runs_size(), 1);
  const v1::RunBatch& b = m.request.runs(0);
  EXPECT_EQ(b.run(), "host:gpu1");
  EXPECT_TRUE(b.sampled());
  EXPECT_EQ(b.metadata().host(), "gpu1");
  EXPECT_THAT(b.steps(), ElementsAre(1700000000000, 1700000000001))
      << "samples numbered by their ms";
  ASSERT_NE(Column(b, "nvidia_smi/utilization_gpu{index=0,name=A100}"), nullptr);
  EXPECT_THAT(Column(b, "nvidia_smi/utilization_gpu{index=1,name=A100}")->values(),
              ElementsAre(12.0));
  EXPECT_THAT(Column(b, "cpu/usage_idle{cpu=cpu-total}")->values(), ElementsAre(93.5));
  EXPECT_THAT(Column(b, "cpu/ok{cpu=cpu-total}")->values(), ElementsAre(1.0))
      << "booleans are 1 and 0";
  ASSERT_EQ(b.texts_size(), 1);
  EXPECT_EQ(b.texts(0).name(), "nvidia_smi/pstate{index=0,name=A100}");
  EXPECT_EQ(b.texts(0).value(), "P0");
  EXPECT_EQ(b.texts(0).step(), 1700000000000);
}

TEST(PointMappingTest, WithoutRunOrHostTheMeasurementIsTheRun) {
  MappedPoints m =
      Map("weather,city=Paris temp=12.5,step=3i 1\nweather,city=Paris temp=13.5,step=3i 2\n");
  ASSERT_EQ(m.request.runs_size(), 1);
  EXPECT_EQ(m.request.runs(0).run(), "weather");
  EXPECT_THAT(Column(m.request.runs(0), "weather/temp{city=Paris}")->values(), ElementsAre(13.5))
      << "a later point of a series at the same step wins";
  EXPECT_THAT(m.request.runs(0).times(), ElementsAre(1e-9)) << "a step's time is its first point's";
}

TEST(PointMappingTest, MetricTagWithOtherFieldsAndRunIdTag) {
  MappedPoints m = Map("training_metrics,metric_name=grad,run_id=r9 value=1,norm=2,step=7i\n");
  const v1::RunBatch& b = m.request.runs(0);
  EXPECT_EQ(b.run(), "r9");
  EXPECT_NE(Column(b, "grad"), nullptr);
  EXPECT_NE(Column(b, "grad/norm"), nullptr);
}

TEST(PointMappingTest, RefusedPointsAreNamedAndTheOthersKept) {
  ParsedBody parsed = ParseLineProtocol(
      "m,run=a v=1,step=-1i\n"
      "m,run=a v=1,step=1.5\n"
      "m,run=a v=1,step=2i\n"
      "m,run=a v=2\n"
      "m,run=b v=1,step=3\n",
      Precision::kNanoseconds);
  MappedPoints m = MapPoints(parsed, "p", kNow);
  ASSERT_EQ(m.errors.size(), 3u);
  EXPECT_EQ(m.errors[0].line, 1u);
  EXPECT_THAT(m.errors[0].message, HasSubstr("field 'step' must be a whole number >= 0"));
  EXPECT_EQ(m.errors[1].line, 2u);
  EXPECT_EQ(m.errors[2].line, 4u);
  EXPECT_THAT(m.errors[2].message, HasSubstr("run 'a' has points with and without field 'step'"));
  ASSERT_EQ(m.request.runs_size(), 2);
  EXPECT_THAT(m.request.runs(0).steps(), ElementsAre(2));
  EXPECT_THAT(m.request.runs(1).steps(), ElementsAre(3)) << "a float step that is whole is a step";
}

}  // namespace
}  // namespace trainwatch::influx
