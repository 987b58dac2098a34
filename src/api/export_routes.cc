// GET /api/v1/export: a run's points as /api/v1/write lines, streamed.
#include <algorithm>
#include <limits>

#include "api/json_writer.h"
#include "api/query_common.h"
#include "api/routes.h"

namespace trainwatch::api {
namespace {

// Writes a run's visible scalar points as /api/v1/write lines, one line per (step, time) with
// bit-exact values, a window of steps at a time: memory stays at a window's worth however long the
// run (the answer is streamed).
class ExportWriter {
 public:
  // Points per piece the windows aim at.
  static constexpr double kPointsPerPiece = 65536;

  ExportWriter(ApiContext& ctx, const storage::RunInfo& run) : ctx_(ctx) {
    prefix_ = "{\"project\":";
    AppendString(&prefix_, run.project);
    prefix_ += ",\"run\":";
    AppendString(&prefix_, run.id);
    prefix_ += ",\"step\":";
    project_ = run.project;
    run_ = run.id;
    uint64_t count = 0;
    for (storage::MetricInfo& m : ctx.engine.ListMetrics(run.project, run.id)) {
      if (m.kind != "scalar" || m.count == 0) continue;  // histograms have no /write line form
      first_ = std::min(first_, m.first_step);
      last_ = std::max(last_, m.last_step);
      count += m.count;
      metrics_.push_back(std::move(m.name));
    }
    next_ = first_;
    if (count > 0) {
      const double steps = static_cast<double>(last_) - static_cast<double>(first_) + 1;
      window_ = static_cast<int64_t>(std::clamp(kPointsPerPiece * steps / static_cast<double>(count), 1.0, 0x1p62));
    }
  }

  // The next window's lines.
  StreamStep Next(std::string* piece) {
    if (metrics_.empty() || next_ > last_) return StreamStep::kDone;
    // The distance as unsigned: exact over the whole int64 range (last_ >= next_ here).
    const uint64_t left = static_cast<uint64_t>(last_) - static_cast<uint64_t>(next_);
    const int64_t to = left < static_cast<uint64_t>(window_) ? last_ : next_ + (window_ - 1);
    cells_.clear();
    storage::SeriesReadOptions options;
    options.from_step = next_;
    options.to_step = to;
    for (uint32_t m = 0; m < metrics_.size(); ++m) {
      points_.clear();
      Status s = ctx_.engine.ReadSeries({project_, run_, metrics_[m]}, options, &points_);
      if (s.code() == StatusCode::kNotFound) continue;  // deleted meanwhile
      if (!s.ok()) return StreamStep::kFailed;
      for (const storage::Point& p : points_) cells_.push_back({p.step, p.time, m, p.value});
    }
    std::stable_sort(cells_.begin(), cells_.end(), [](const Cell& a, const Cell& b) {
      return a.step != b.step ? a.step < b.step : a.time < b.time;
    });
    piece->reserve(cells_.size() * 24);
    for (size_t i = 0; i < cells_.size();) {
      size_t j = i;
      *piece += prefix_;
      AppendInt(piece, cells_[i].step);
      *piece += ",\"time\":";
      AppendNumber(piece, cells_[i].time, NonFinite::kBareTokens);
      *piece += ",\"metrics\":{";
      for (; j < cells_.size() && cells_[j].step == cells_[i].step && cells_[j].time == cells_[i].time; ++j) {
        if (j > i) piece->push_back(',');
        AppendString(piece, metrics_[cells_[j].metric]);
        piece->push_back(':');
        AppendNumber(piece, cells_[j].value, NonFinite::kBareTokens);
      }
      *piece += "}}\n";
      i = j;
    }
    if (to == last_) return StreamStep::kDone;
    next_ = to + 1;
    return StreamStep::kMore;
  }

 private:
  struct Cell {
    int64_t step;
    double time;
    uint32_t metric;
    double value;
  };

  ApiContext& ctx_;
  std::string project_, run_, prefix_;
  std::vector<std::string> metrics_;
  int64_t first_ = std::numeric_limits<int64_t>::max();
  int64_t last_ = std::numeric_limits<int64_t>::min();
  int64_t next_ = 0;
  int64_t window_ = 1;
  std::vector<Cell> cells_;
  std::vector<storage::Point> points_;
};

// Every visible point of a run as /api/v1/write lines, streamed (ExportWriter).
void HandleExport(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  storage::RunInfo info;
  if (!RequireRun(ctx, req, respond, &info)) return;
  auto writer = std::make_shared<ExportWriter>(ctx, info);
  HttpResponse r;
  r.content_type = "application/x-ndjson";
  r.stream = [writer](std::string* piece) { return writer->Next(piece); };
  respond(std::move(r));
}

}  // namespace

void RegisterExportRoutes(HttpServer& server, ApiContext& ctx) {
  RouteStoreRead(server, ctx, "/api/v1/export", HandleExport);
}

}  // namespace trainwatch::api
