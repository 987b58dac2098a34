#include "influx/line_outbox.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/testing/fault_injection_fs.h"
#include "common/testing/temp_dir.h"
#include "influx/influx_mirror.h"

namespace trainwatch::influx {
namespace {

using test::FaultInjectionFileSystem;
using test::TempDir;

std::string Lines(int from, int to) {
  std::string out;
  for (int i = from; i < to; ++i) out += "m v=" + std::to_string(i) + "\n";
  return out;
}

// Drains the outbox in chunks of `max` bytes, acknowledging each.
std::string DrainAll(LineOutbox& outbox, size_t max) {
  std::string out;
  for (;;) {
    Result<LineOutbox::Chunk> chunk = outbox.Peek(max);
    EXPECT_TRUE(chunk.ok()) << chunk.status().ToString();
    if (chunk->count == 0) return out;
    out += chunk->lines;
    EXPECT_TRUE(outbox.Ack(chunk->end).ok());
  }
}

TEST(LineOutboxTest, FifoAcrossSegmentsAndReopen) {
  TempDir dir;
  LineOutboxOptions options;
  options.segment_bytes = 64;  // many segments
  {
    auto outbox = LineOutbox::Open(PosixFileSystem(), dir.path(), options);
    ASSERT_TRUE(outbox.ok());
    for (int i = 0; i < 40; i += 4) ASSERT_TRUE((*outbox)->Append(Lines(i, i + 4)).ok());
    EXPECT_EQ((*outbox)->backlog_bytes(), Lines(0, 40).size());
    // Deliver the first ten lines only.
    Result<LineOutbox::Chunk> chunk = (*outbox)->Peek(Lines(0, 10).size());
    ASSERT_TRUE(chunk.ok());
    EXPECT_EQ(chunk->lines, Lines(0, 10));
    EXPECT_EQ(chunk->count, 10u);
    ASSERT_TRUE((*outbox)->Ack(chunk->end).ok());
    EXPECT_EQ((*outbox)->backlog_bytes(), Lines(10, 40).size());
  }
  auto reopened = LineOutbox::Open(PosixFileSystem(), dir.path(), options);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->backlog_bytes(), Lines(10, 40).size());
  ASSERT_TRUE((*reopened)->Append(Lines(40, 45)).ok());
  EXPECT_EQ(DrainAll(**reopened, 50), Lines(10, 45));
  EXPECT_EQ((*reopened)->backlog_bytes(), 0u);
  // Delivered segments are gone: what is left is the head and the cursor.
  Result<std::vector<std::string>> names = PosixFileSystem().ListDir(dir.path());
  ASSERT_TRUE(names.ok());
  EXPECT_LE(names->size(), 2u);
}

TEST(LineOutboxTest, BacklogIsBoundedAndAppendsAreAllOrNothing) {
  TempDir dir;
  LineOutboxOptions options;
  options.max_bytes = Lines(0, 10).size();
  auto outbox = LineOutbox::Open(PosixFileSystem(), dir.path(), options);
  ASSERT_TRUE(outbox.ok());
  ASSERT_TRUE((*outbox)->Append(Lines(0, 8)).ok());
  Status full = (*outbox)->Append(Lines(8, 12));
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(full.message().find("mirror outbox full"), std::string::npos);
  EXPECT_EQ(DrainAll(**outbox, 1 << 20), Lines(0, 8));
  ASSERT_TRUE((*outbox)->Append(Lines(8, 12)).ok());  // room again once delivered
  EXPECT_EQ(DrainAll(**outbox, 1 << 20), Lines(8, 12));
}

TEST(LineOutboxTest, WhatWasSyncedSurvivesACrashAndATornLineIsCut) {
  TempDir dir;
  FaultInjectionFileSystem fs(PosixFileSystem(), FaultInjectionFileSystem::Syncs::kSimulated);
  {
    auto outbox = LineOutbox::Open(fs, dir.path());
    ASSERT_TRUE(outbox.ok());
    ASSERT_TRUE((*outbox)->Append(Lines(0, 5)).ok());
    Result<LineOutbox::Chunk> chunk = (*outbox)->Peek(Lines(0, 2).size());
    ASSERT_TRUE(chunk.ok());
    ASSERT_TRUE((*outbox)->Ack(chunk->end).ok());
    ASSERT_TRUE(fs.Crash().ok());
  }
  fs.Restart();
  // A torn append: half a line after the synced ones.
  {
    auto file = PosixFileSystem().OpenAppendable(dir.Join("0000000000000001.lp"));
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)->Append("m v=hal").ok());
  }
  auto outbox = LineOutbox::Open(fs, dir.path());
  ASSERT_TRUE(outbox.ok()) << outbox.status().ToString();
  EXPECT_EQ(DrainAll(**outbox, 1 << 20), Lines(2, 5));
}

TEST(FormatLinesTest, TrainingMetricsLayout) {
  v1::WriteRequest request;
  v1::RunBatch* batch = request.add_runs();
  batch->set_project("proj");
  batch->set_run("run 1");
  batch->add_steps(7);
  batch->add_times(1700000000.25);
  batch->add_steps(8);
  batch->add_times(1700000001.5);
  v1::MetricColumn* loss = batch->add_metrics();
  loss->set_name("loss");
  loss->add_rows(0);
  loss->add_values(0.5);
  loss->add_rows(1);
  loss->add_values(std::nan(""));                  // no line protocol for NaN: skipped
  v1::MetricColumn* dense = batch->add_metrics();  // no rows: values[i] is row i
  dense->set_name("lr");
  dense->add_values(0.25);
  dense->add_values(0.125);
  v1::MetricColumn* gpu = batch->add_metrics();
  gpu->set_name("nvidia_smi/temp{gpu=1,host=a b}");
  gpu->add_rows(1);
  gpu->add_values(61);
  std::string out;
  EXPECT_EQ(FormatLines(request, &out), 4u);
  EXPECT_EQ(
      out,
      "training_metrics,metric_name=loss,project=proj,run=run\\ 1 step=7i,value=0.5 "
      "1700000000250000\n"
      "training_metrics,metric_name=lr,project=proj,run=run\\ 1 step=7i,value=0.25 "
      "1700000000250000\n"
      "training_metrics,metric_name=lr,project=proj,run=run\\ 1 step=8i,value=0.125 "
      "1700000001500000\n"
      "training_metrics,gpu=1,host=a\\ b,metric_name=nvidia_smi/temp,project=proj,run=run\\ 1 "
      "step=8i,value=61 1700000001500000\n");
}

}  // namespace
}  // namespace trainwatch::influx
