// GET /api/v1/export: a run's points as /api/v1/write lines, streamed.
#include "api/json_writer.h"
#include "api/query_common.h"
#include "api/routes.h"
#include "query/export.h"

namespace trainwatch::api {
namespace {

// Writes a run's visible scalar points as /api/v1/write lines, one line per (step, time) (per
// (rank, step, time) for a distributed run, each line with its "rank") with
// bit-exact values, one window of the querier's export (query/export.h) per piece: memory stays at
// a window's worth however long the run (the answer is streamed).
class ExportWriter {
 public:
  ExportWriter(const query::Querier& querier, query::ExportPlan plan)
      : querier_(querier), plan_(std::move(plan)), cursor_(plan_) {
    prefix_ = "{\"project\":";
    AppendString(&prefix_, plan_.run.project);
    prefix_ += ",\"run\":";
    AppendString(&prefix_, plan_.run.run);
    rank_prefix_ = prefix_ + ",\"rank\":";
    prefix_ += ",\"step\":";
  }

  // The next window's lines.
  StreamStep Next(std::string* piece) {
    int64_t from, to;
    if (!cursor_.Next(&from, &to)) return StreamStep::kDone;
    cells_.clear();
    if (!querier_.ReadExportWindow(plan_, from, to, &cells_).ok()) return StreamStep::kFailed;
    piece->reserve(cells_.size() * 24);
    for (size_t i = 0; i < cells_.size();) {
      size_t j = i;
      if (plan_.distributed) {
        *piece += rank_prefix_;
        AppendInt(piece, cells_[i].rank);
        *piece += ",\"step\":";
      } else {
        *piece += prefix_;
      }
      AppendInt(piece, cells_[i].step);
      *piece += ",\"time\":";
      AppendNumber(piece, cells_[i].time, NonFinite::kBareTokens);
      *piece += ",\"metrics\":{";
      for (; j < cells_.size() && cells_[j].rank == cells_[i].rank &&
             cells_[j].step == cells_[i].step && cells_[j].time == cells_[i].time;
           ++j) {
        if (j > i) piece->push_back(',');
        AppendString(piece, plan_.metrics[cells_[j].metric]);
        piece->push_back(':');
        AppendNumber(piece, cells_[j].value, NonFinite::kBareTokens);
      }
      *piece += "}}\n";
      i = j;
    }
    return cursor_.done() ? StreamStep::kDone : StreamStep::kMore;
  }

 private:
  const query::Querier& querier_;
  const query::ExportPlan plan_;
  query::ExportCursor cursor_;
  std::string prefix_;
  std::string rank_prefix_;  // a distributed run's lines: the prefix up to the rank's value
  std::vector<query::ExportCell> cells_;
};

// Every visible point of a run as /api/v1/write lines, streamed (ExportWriter).
void HandleExport(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  storage::RunInfo info;
  if (!RequireRun(ctx, req, respond, &info)) return;
  Result<query::ExportPlan> plan = ctx.querier.PlanExport({info.project, info.id});
  if (!plan.ok())
    return respond(HttpResponse::Error(HttpStatusOf(plan.status()), plan.status().message()));
  auto writer = std::make_shared<ExportWriter>(ctx.querier, std::move(plan).value());
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
