#include "batch_builder.h"

#include <gtest/gtest.h>

#include "run_state.h"

namespace trainwatch::sdk {
namespace {

Record Rec(RunState& run, int64_t step, std::initializer_list<std::pair<const char*, double>> metrics,
           bool sampled = false) {
  Record r{&run, step, 1000.0 + step, 0, sampled, {}, {}};
  for (const auto& [name, value] : metrics) {
    r.ids[r.count] = run.names.Intern(name);
    r.values[r.count++] = value;
  }
  return r;
}

TEST(BatchBuilderTest, RowsPerStepDenseAndSparseColumns) {
  RunState run("p", "r");
  BatchBuilder b;
  b.Add(Rec(run, 0, {{"loss", 1.0}, {"lr", 0.1}}));
  b.Add(Rec(run, 1, {{"loss", 0.9}}));
  b.Add(Rec(run, 1, {{"lr", 0.1}}));  // same step, second call: same row
  b.Add(Rec(run, 2, {{"loss", 0.8}, {"val_loss", 1.5}}));
  b.Add(Rec(run, 2, {{"lr", 0.05}}));
  EXPECT_EQ(b.points(), 7u);
  v1::WriteRequest req;
  b.TakeInto(&req);
  EXPECT_TRUE(b.empty());
  ASSERT_EQ(req.runs_size(), 1);
  const v1::RunBatch& batch = req.runs(0);
  EXPECT_EQ(batch.project(), "p");
  EXPECT_EQ(batch.run(), "r");
  EXPECT_FALSE(batch.sampled());
  ASSERT_EQ(batch.steps_size(), 3);
  EXPECT_EQ(batch.times(2), 1002.0);
  ASSERT_EQ(batch.metrics_size(), 3);
  EXPECT_EQ(batch.metrics(0).name(), "loss");
  EXPECT_EQ(batch.metrics(0).rows_size(), 0);  // dense
  EXPECT_EQ(batch.metrics(0).values(2), 0.8);
  EXPECT_EQ(batch.metrics(1).name(), "lr");
  EXPECT_EQ(batch.metrics(1).rows_size(), 0);
  EXPECT_EQ(batch.metrics(2).name(), "val_loss");
  ASSERT_EQ(batch.metrics(2).rows_size(), 1);
  EXPECT_EQ(batch.metrics(2).rows(0), 2u);
  EXPECT_EQ(batch.metrics(2).values(0), 1.5);
}

TEST(BatchBuilderTest, SameMetricTwiceAtOneStepTakesItsOwnRow) {
  RunState run("p", "r");
  BatchBuilder b;
  b.Add(Rec(run, 5, {{"loss", 1.0}}));
  b.Add(Rec(run, 5, {{"loss", 2.0}}));
  v1::WriteRequest req;
  b.TakeInto(&req);
  const v1::RunBatch& batch = req.runs(0);
  ASSERT_EQ(batch.steps_size(), 2);
  EXPECT_EQ(batch.steps(0), 5);
  EXPECT_EQ(batch.steps(1), 5);
  ASSERT_EQ(batch.metrics(0).values_size(), 2);
  EXPECT_EQ(batch.metrics(0).values(1), 2.0);
}

TEST(BatchBuilderTest, SampledRowsAndOtherRunsGetBatchesOfTheirOwnAndControlKeepsItsPlace) {
  RunState a("p", "a"), b_run("p", "b");
  BatchBuilder b;
  v1::RunBatch config;
  config.set_run("a");
  config.mutable_metadata()->set_config_json("{}");
  v1::RunBatch finish;
  finish.set_run("a");
  finish.mutable_metadata()->set_status("finished");
  b.AddRunBatch(finish, /*after_rows=*/true);
  b.AddRunBatch(config, /*after_rows=*/false);
  b.Add(Rec(a, 0, {{"loss", 1.0}}));
  b.Add(Rec(a, 0, {{"system/cpu_percent", 12.5}}, /*sampled=*/true));
  b.Add(Rec(b_run, 0, {{"loss", 2.0}}));
  v1::WriteRequest req;
  b.TakeInto(&req);
  ASSERT_EQ(req.runs_size(), 5);
  EXPECT_TRUE(req.runs(0).metadata().has_config_json());
  EXPECT_EQ(req.runs(1).run(), "a");
  EXPECT_FALSE(req.runs(1).sampled());
  EXPECT_EQ(req.runs(2).run(), "a");
  EXPECT_TRUE(req.runs(2).sampled());
  EXPECT_EQ(req.runs(2).metrics(0).name(), "system/cpu_percent");
  EXPECT_EQ(req.runs(3).run(), "b");
  EXPECT_EQ(req.runs(4).metadata().status(), "finished");
}

}  // namespace
}  // namespace trainwatch::sdk
