// BatchBuilder: turns records drained from the buffer into one WriteRequest — rows per run (one
// per step), a column per metric (dense when every row has it, else with row indices) — plus
// run batches that carry metadata, histograms or a finish, placed before or after the rows.
//
// Not thread-safe: the batcher thread owns it.
#pragma once

#include <cstdint>
#include <vector>

#include "record.h"
#include "trainwatch/v1/ingest.pb.h"

namespace trainwatch::sdk {

class BatchBuilder {
 public:
  void Add(const Record& record);
  // A prebuilt run batch (project and run set), applied before the rows, or after them (a finish).
  void AddRunBatch(v1::RunBatch batch, bool after_rows);

  size_t points() const { return points_; }
  // Serialized size of the run batches added with AddRunBatch (images, histograms, metadata).
  size_t run_batch_bytes() const { return run_batch_bytes_; }
  bool empty() const { return runs_.empty() && before_.empty() && after_.empty(); }

  // Moves everything into `request` (writer id and sequence left to the caller) and resets.
  void TakeInto(v1::WriteRequest* request);

 private:
  struct Column {
    uint32_t id;
    int last_row = -1;
    std::vector<uint32_t> rows;
    std::vector<double> values;
  };
  struct PendingRun {
    RunState* run;
    bool sampled;
    std::vector<int64_t> steps;
    std::vector<double> times;
    std::vector<Column> columns;
    std::vector<int32_t> column_of_id;  // -1: no column yet
  };
  PendingRun& PendingFor(RunState* run, bool sampled);

  std::vector<PendingRun> runs_;
  std::vector<v1::RunBatch> before_;
  std::vector<v1::RunBatch> after_;
  size_t points_ = 0;
  size_t run_batch_bytes_ = 0;
};

}  // namespace trainwatch::sdk
