#include "batch_builder.h"

#include "run_state.h"

namespace trainwatch::sdk {

BatchBuilder::PendingRun& BatchBuilder::PendingFor(RunState* run, bool sampled) {
  for (PendingRun& p : runs_) {
    if (p.run == run && p.sampled == sampled) return p;
  }
  PendingRun& p = runs_.emplace_back();
  p.run = run;
  p.sampled = sampled;
  return p;
}

void BatchBuilder::Add(const Record& record) {
  PendingRun& p = PendingFor(record.run, record.sampled);
  auto new_row = [&] {
    p.steps.push_back(record.step);
    p.times.push_back(record.time);
  };
  if (p.steps.empty() || p.steps.back() != record.step) new_row();
  for (int i = 0; i < record.count; ++i) {
    uint32_t id = record.ids[i];
    if (id >= p.column_of_id.size()) p.column_of_id.resize(id + 1, -1);
    if (p.column_of_id[id] < 0) {
      p.column_of_id[id] = static_cast<int32_t>(p.columns.size());
      p.columns.emplace_back().id = id;
    }
    Column& column = p.columns[p.column_of_id[id]];
    int row = static_cast<int>(p.steps.size()) - 1;
    if (column.last_row == row) {  // the same metric twice at one step: a row of its own
      new_row();
      ++row;
    }
    column.last_row = row;
    column.rows.push_back(static_cast<uint32_t>(row));
    column.values.push_back(record.values[i]);
    ++points_;
  }
}

void BatchBuilder::AddRunBatch(v1::RunBatch batch, bool after_rows) {
  run_batch_bytes_ += batch.ByteSizeLong();
  (after_rows ? after_ : before_).push_back(std::move(batch));
}

void BatchBuilder::TakeInto(v1::WriteRequest* request) {
  for (v1::RunBatch& b : before_) *request->add_runs() = std::move(b);
  for (PendingRun& p : runs_) {
    v1::RunBatch* batch = request->add_runs();
    p.run->Address(batch);
    batch->set_sampled(p.sampled);
    batch->mutable_steps()->Add(p.steps.begin(), p.steps.end());
    batch->mutable_times()->Add(p.times.begin(), p.times.end());
    for (Column& c : p.columns) {
      v1::MetricColumn* column = batch->add_metrics();
      column->set_name(p.run->names.Name(c.id));
      if (c.rows.size() != p.steps.size())
        column->mutable_rows()->Add(c.rows.begin(), c.rows.end());
      column->mutable_values()->Add(c.values.begin(), c.values.end());
    }
  }
  for (v1::RunBatch& b : after_) *request->add_runs() = std::move(b);
  runs_.clear();
  before_.clear();
  after_.clear();
  points_ = 0;
  run_batch_bytes_ = 0;
}

}  // namespace trainwatch::sdk
