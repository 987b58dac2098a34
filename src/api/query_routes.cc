// GET /api/v1/runs, /api/v1/run, /api/v1/metrics, /api/v1/series, /api/v1/series/batch,
// /api/v1/series/superseded, /api/v1/export.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "api/json_writer.h"
#include "api/query_params.h"
#include "api/routes.h"
#include "api/run_search.h"

namespace trainwatch::api {
namespace {

constexpr uint32_t kMaxBuckets = 100'000;
constexpr size_t kMaxRunsPerPage = 10'000;
constexpr size_t kMaxSeriesPerQuery = 1'000;

// A step bound from a double: saturates at the int64 range (doubles beyond it, and ±Inf).
int64_t ClampToStep(double x) {
  if (!(x < 0x1p63)) return std::numeric_limits<int64_t>::max();
  if (x < -0x1p63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(x);
}

std::vector<std::string> SplitComma(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void AppendPoint(std::string* out, const storage::Point& p) {
  out->push_back('[');
  AppendInt(out, p.step);
  out->push_back(',');
  AppendNumber(out, p.time, NonFinite::kStrings);
  out->push_back(',');
  AppendNumber(out, p.value, NonFinite::kStrings);
  out->push_back(']');
}

void AppendLatest(std::string* out, const std::vector<std::pair<std::string, storage::Point>>& latest) {
  out->push_back('{');
  bool first = true;
  for (const auto& [name, p] : latest) {
    if (!first) out->push_back(',');
    first = false;
    // No time: the run's last_write_time says how fresh it is, and a table of many runs does not
    // need one per value (it is a third of the bytes of this, the heaviest listing).
    AppendString(out, name);
    *out += ":{\"step\":";
    AppendInt(out, p.step);
    *out += ",\"value\":";
    AppendNumber(out, p.value, NonFinite::kStrings);
    out->push_back('}');
  }
  out->push_back('}');
}

// The run's fields as JSON members, without the braces (callers add their own members).
void AppendRunFields(std::string* out, const storage::RunInfo& info) {
  *out += "\"project\":";
  AppendString(out, info.project);
  *out += ",\"id\":";
  AppendString(out, info.id);
  *out += ",\"name\":";
  AppendString(out, info.name);
  *out += ",\"group\":";
  AppendString(out, info.group);
  *out += ",\"tags\":[";
  bool first = true;
  for (const std::string& tag : info.tags) {
    if (!first) out->push_back(',');
    first = false;
    AppendString(out, tag);
  }
  *out += "],\"config\":" + info.config.dump() + ",\"status\":\"";
  *out += storage::RunStatusName(info.status);
  *out += "\",\"start_time\":";
  AppendNumber(out, info.start_time, NonFinite::kStrings);
  *out += ",\"end_time\":";
  AppendNumber(out, info.end_time, NonFinite::kStrings);
  *out += ",\"last_write_time\":";
  AppendNumber(out, info.last_write_time, NonFinite::kStrings);
  *out += ",\"host\":";
  AppendString(out, info.host);
  *out += ",\"last_heartbeat\":";
  AppendNumber(out, info.last_heartbeat, NonFinite::kStrings);
  *out += ",\"heartbeat_interval\":";
  AppendNumber(out, info.heartbeat_interval, NonFinite::kStrings);
  *out += info.has_graph ? ",\"has_graph\":true" : ",\"has_graph\":false";
}

void HandleRuns(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  RunQuery query;
  query.project = req.Param("project");
  query.name_regex = req.Param("q");
  query.tags = req.Params("tag");
  query.status = req.Param("status");
  query.group = req.Param("group");
  query.sort = req.Param("sort", query.sort);
  query.latest = SplitComma(req.Param("latest"));
  for (const auto& [key, value] : req.query) {
    if (key.starts_with("config.")) query.config[key.substr(7)] = value;
  }
  int64_t n;
  if (std::string v = req.Param("limit"); !v.empty()) {
    if (!ParseInt(v, &n) || n < 0) return respond(HttpResponse::Error(400, "limit must be a non-negative integer"));
    query.limit = std::min<size_t>(n, kMaxRunsPerPage);
  }
  if (std::string v = req.Param("offset"); !v.empty()) {
    if (!ParseInt(v, &n) || n < 0) return respond(HttpResponse::Error(400, "offset must be a non-negative integer"));
    query.offset = n;
  }
  Result<RunPage> page = SearchRuns(ctx.engine, query);
  if (!page.ok()) return respond(HttpResponse::Error(HttpStatusOf(page.status()), page.status().message()));
  std::string body;
  body.reserve(page->rows.size() * (256 + 64 * query.latest.size()));
  body += "{\"total\":" + std::to_string(page->total) + ",\"offset\":" +
                     std::to_string(query.offset) + ",\"limit\":" + std::to_string(query.limit) +
                     ",\"runs\":[";
  for (size_t i = 0; i < page->rows.size(); ++i) {
    if (i) body.push_back(',');
    body.push_back('{');
    AppendRunFields(&body, page->rows[i].info);
    body += ",\"latest\":";
    AppendLatest(&body, page->rows[i].latest);
    body.push_back('}');
  }
  body += "]}\n";
  respond(HttpResponse::Json(200, std::move(body)));
}

std::string MetricsJson(const std::vector<storage::MetricInfo>& metrics) {
  std::string body = "[";
  for (size_t i = 0; i < metrics.size(); ++i) {
    const storage::MetricInfo& m = metrics[i];
    if (i) body.push_back(',');
    body += "{\"name\":";
    AppendString(&body, m.name);
    body += ",\"kind\":\"" + m.kind + "\",\"count\":" + std::to_string(m.count) +
            ",\"first_step\":" + std::to_string(m.first_step) +
            ",\"last_step\":" + std::to_string(m.last_step) +
            ",\"timelines\":" + std::to_string(m.timelines) + ",\"latest\":";
    if (m.has_latest) {
      AppendPoint(&body, m.latest);
    } else {
      body += "null";
    }
    body.push_back('}');
  }
  body.push_back(']');
  return body;
}

bool RequireRun(ApiContext& ctx, const HttpRequest& req, const Responder& respond,
                storage::RunInfo* info) {
  std::string run = req.Param("run");
  if (run.empty()) {
    respond(HttpResponse::Error(400, "query parameter 'run' is required"));
    return false;
  }
  std::string project = req.Param("project", "default");
  auto found = ctx.engine.GetRun(project, run);
  if (!found) {
    respond(HttpResponse::Error(404, "no run '" + run + "' in project '" + project + "'"));
    return false;
  }
  *info = std::move(*found);
  return true;
}

void HandleRun(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  storage::RunInfo info;
  if (!RequireRun(ctx, req, respond, &info)) return;
  std::string body = "{";
  AppendRunFields(&body, info);
  body += ",\"metrics\":" + MetricsJson(ctx.engine.ListMetrics(info.project, info.id)) + "}\n";
  respond(HttpResponse::Json(200, std::move(body)));
}

void HandleMetrics(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  storage::RunInfo info;
  if (!RequireRun(ctx, req, respond, &info)) return;
  respond(HttpResponse::Json(200, MetricsJson(ctx.engine.ListMetrics(info.project, info.id)) + "\n"));
}

bool ParseAxis(const std::string& text, storage::XAxis* axis) {
  if (text == "step" || text.empty()) *axis = storage::XAxis::kStep;
  else if (text == "time") *axis = storage::XAxis::kWallTime;
  else if (text == "relative") *axis = storage::XAxis::kRelativeTime;
  else return false;
  return true;
}

// The parameters /api/v1/series and /api/v1/series/batch share.
struct SeriesQuery {
  std::string project;
  std::vector<std::string> runs;
  std::string x_text;
  storage::XAxis axis = storage::XAxis::kStep;
  double from = -INFINITY, to = INFINITY;
  int64_t buckets = 0;  // 0: raw points
  size_t limit = 0;     // raw points in the whole answer (ApiContext::max_raw_points, or fewer)
};

// Reads project, run (one or more), x, from, to and buckets; an error response when one is missing
// or malformed.
std::optional<HttpResponse> ParseSeriesQuery(const HttpRequest& req, size_t max_raw_points, SeriesQuery* q) {
  q->project = req.Param("project", "default");
  q->runs = req.Params("run");
  if (q->runs.empty()) return HttpResponse::Error(400, "query parameter 'run' (one or more) is required");
  if (q->runs.size() > kMaxSeriesPerQuery) return HttpResponse::Error(400, "too many runs in one query");
  q->x_text = req.Param("x", "step");
  if (!ParseAxis(q->x_text, &q->axis)) return HttpResponse::Error(400, "x must be step, time or relative");
  if (std::string v = req.Param("from"); !v.empty() && !ParseDouble(v, &q->from)) {
    return HttpResponse::Error(400, "from must be a finite number");
  }
  if (std::string v = req.Param("to"); !v.empty() && !ParseDouble(v, &q->to)) {
    return HttpResponse::Error(400, "to must be a finite number");
  }
  if (std::string v = req.Param("buckets"); !v.empty()) {
    if (!ParseInt(v, &q->buckets) || q->buckets < 1 || q->buckets > kMaxBuckets) {
      return HttpResponse::Error(400, "buckets must be an integer from 1 to " + std::to_string(kMaxBuckets));
    }
  }
  q->limit = max_raw_points;
  if (std::string v = req.Param("limit"); !v.empty()) {
    int64_t limit = 0;
    if (!ParseInt(v, &limit) || limit < 1 || static_cast<uint64_t>(limit) > max_raw_points) {
      return HttpResponse::Error(400, "limit must be an integer from 1 to " + std::to_string(max_raw_points) +
                                          " (--max-raw-points)");
    }
    q->limit = static_cast<size_t>(limit);
  }
  return std::nullopt;
}

// One grid for all runs of a metric: the requested range, else the union of their ranges. False
// when `to` is below `from`.
bool GridOf(ApiContext& ctx, const SeriesQuery& q, const std::string& metric, storage::BucketGrid* grid) {
  grid->count = static_cast<uint32_t>(q.buckets);
  double lo = INFINITY, hi = -INFINITY;
  for (const std::string& run : q.runs) {
    double a, b;
    if (ctx.engine.XRange({q.project, run, metric}, q.axis, &a, &b).ok()) {
      lo = std::min(lo, a);
      hi = std::max(hi, b);
    }
  }
  grid->from = std::isfinite(q.from) ? q.from : (std::isfinite(lo) ? lo : 0);
  grid->to = std::isfinite(q.to) ? q.to : (std::isfinite(hi) ? std::max(hi, grid->from) : grid->from);
  return grid->to >= grid->from;
}

void AppendGrid(std::string* body, const storage::BucketGrid& grid) {
  *body += "{\"from\":";
  AppendNumber(body, grid.from, NonFinite::kStrings);
  *body += ",\"to\":";
  AppendNumber(body, grid.to, NonFinite::kStrings);
  *body += ",\"buckets\":" + std::to_string(grid.count) + ",\"width\":";
  AppendNumber(body, grid.Width(), NonFinite::kStrings);
  body->push_back('}');
}

// The runs' raw points, q.limit in all at most (whatever the range holds: the answer's memory is
// bounded). A series cut short says where the rest starts: "next_from" (a step; x=step) for the
// next request's `from`, or "truncated" (x=time, relative: ask for buckets or a narrower range).
void AppendRawSeries(ApiContext& ctx, const SeriesQuery& q, const std::string& metric, std::string* body) {
  *body += ",\"series\":[";
  size_t budget = q.limit;
  for (size_t i = 0; i < q.runs.size(); ++i) {
    std::vector<storage::Point> points;
    storage::SeriesReadOptions options;
    if (q.axis == storage::XAxis::kStep) {
      options.from_step = ClampToStep(std::ceil(q.from));
      options.to_step = ClampToStep(std::floor(q.to));
      if (q.from > 0x1p63 || q.to < -0x1p63) options.to_step = options.from_step - 1;  // empty range
    }
    // With the budget spent, one point is read to say where this series would start.
    options.max_points = std::max<size_t>(budget, 1);
    std::optional<int64_t> next;
    Status s = ctx.engine.ReadSeries({q.project, q.runs[i], metric}, options, &points, &next);
    if (s.ok() && budget == 0 && !points.empty()) {
      next = points.front().step;
      points.clear();
    }
    budget -= std::min(budget, points.size());
    if (i) body->push_back(',');
    *body += "{\"run\":";
    AppendString(body, q.runs[i]);
    if (!s.ok()) {
      *body += ",\"error\":";
      AppendString(body, s.message());
      *body += ",\"points\":[]}";
      continue;
    }
    double origin = 0;
    if (q.axis == storage::XAxis::kRelativeTime) {
      if (auto run = ctx.engine.GetRun(q.project, q.runs[i])) origin = run->start_time;
    }
    *body += ",\"points\":[";
    bool first = true;
    for (const storage::Point& p : points) {
      if (q.axis != storage::XAxis::kStep) {
        double x = p.time - origin;
        if (x < q.from || x > q.to) continue;
      }
      if (!first) body->push_back(',');
      first = false;
      AppendPoint(body, p);
    }
    *body += "]";
    if (next && q.axis == storage::XAxis::kStep) {
      *body += ",\"next_from\":";
      AppendInt(body, *next);
    } else if (next) {
      *body += ",\"truncated\":true";
    }
    body->push_back('}');
  }
  *body += "]}\n";
}

// A bucket's min or max: null for a bucket of NaNs only.
void AppendRangeEnd(std::string* body, const storage::Bucket& b, double v) {
  if (b.count > b.nan_count) AppendNumber(body, v, NonFinite::kStrings); else *body += "null";
}

void AppendBucketObjects(const std::vector<storage::Bucket>& buckets, std::string* body) {
  *body += ",\"buckets\":[";
  for (size_t k = 0; k < buckets.size(); ++k) {
    const storage::Bucket& b = buckets[k];
    if (k) body->push_back(',');
    *body += "{\"i\":" + std::to_string(b.index) + ",\"count\":" + std::to_string(b.count) +
             ",\"nan_count\":" + std::to_string(b.nan_count) + ",\"min\":";
    AppendRangeEnd(body, b, b.min);
    *body += ",\"max\":";
    AppendRangeEnd(body, b, b.max);
    *body += ",\"first\":";
    AppendNumber(body, b.first, NonFinite::kStrings);
    *body += ",\"last\":";
    AppendNumber(body, b.last, NonFinite::kStrings);
    *body += ",\"first_step\":";
    AppendInt(body, b.first_step);
    *body += ",\"last_step\":";
    AppendInt(body, b.last_step);
    *body += ",\"sum\":";
    AppendNumber(body, b.sum, NonFinite::kStrings);
    body->push_back('}');
  }
  body->push_back(']');
}

// The same fields, one array per field: a third of the bytes, and far quicker for a browser to
// parse than as many small objects.
void AppendBucketColumns(const std::vector<storage::Bucket>& buckets, std::string* body) {
  auto column = [&](const char* name, auto append) {
    *body += ",\"";
    *body += name;
    *body += "\":[";
    for (size_t k = 0; k < buckets.size(); ++k) {
      if (k) body->push_back(',');
      append(buckets[k]);
    }
    body->push_back(']');
  };
  using B = storage::Bucket;
  column("i", [&](const B& b) { AppendInt(body, b.index); });
  column("count", [&](const B& b) { AppendInt(body, static_cast<int64_t>(b.count)); });
  column("nan_count", [&](const B& b) { AppendInt(body, static_cast<int64_t>(b.nan_count)); });
  column("min", [&](const B& b) { AppendRangeEnd(body, b, b.min); });
  column("max", [&](const B& b) { AppendRangeEnd(body, b, b.max); });
  column("first", [&](const B& b) { AppendNumber(body, b.first, NonFinite::kStrings); });
  column("last", [&](const B& b) { AppendNumber(body, b.last, NonFinite::kStrings); });
  column("first_step", [&](const B& b) { AppendInt(body, b.first_step); });
  column("last_step", [&](const B& b) { AppendInt(body, b.last_step); });
  column("sum", [&](const B& b) { AppendNumber(body, b.sum, NonFinite::kStrings); });
}

// `"grid":{...},"series":[...]` of one metric, downsampled; each run's buckets as objects or columns.
void AppendDownsampled(ApiContext& ctx, const SeriesQuery& q, const std::string& metric,
                       const storage::BucketGrid& grid, bool columns, std::string* body) {
  *body += ",\"grid\":";
  AppendGrid(body, grid);
  *body += ",\"series\":[";
  for (size_t i = 0; i < q.runs.size(); ++i) {
    std::vector<storage::Bucket> out;
    Status s = ctx.engine.Downsample({q.project, q.runs[i], metric}, q.axis, grid, &out);
    if (i) body->push_back(',');
    *body += "{\"run\":";
    AppendString(body, q.runs[i]);
    if (!s.ok()) {
      *body += ",\"error\":";
      AppendString(body, s.message());
    }
    if (columns) AppendBucketColumns(out, body); else AppendBucketObjects(out, body);
    body->push_back('}');
  }
  body->push_back(']');
}

// GET /api/v1/series?project=P&run=R1&run=R2&metric=M[&x=step|time|relative][&from=&to=][&buckets=N]
void HandleSeries(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  SeriesQuery q;
  if (auto error = ParseSeriesQuery(req, ctx.max_raw_points, &q)) return respond(std::move(*error));
  std::string metric = req.Param("metric");
  if (metric.empty()) return respond(HttpResponse::Error(400, "query parameter 'metric' is required"));
  std::string body = "{\"metric\":";
  AppendString(&body, metric);
  body += ",\"x\":\"" + q.x_text + "\"";
  if (q.buckets == 0) {
    AppendRawSeries(ctx, q, metric, &body);
    return respond(HttpResponse::Json(200, std::move(body)));
  }
  storage::BucketGrid grid;
  if (!GridOf(ctx, q, metric, &grid)) return respond(HttpResponse::Error(400, "to is below from"));
  AppendDownsampled(ctx, q, metric, grid, /*columns=*/false, &body);
  body += "}\n";
  respond(HttpResponse::Json(200, std::move(body)));
}

// GET /api/v1/series/batch?project=P&run=R1&run=R2&metric=M1&metric=M2&buckets=N[&x=][&from=&to=]:
// what /api/v1/series?buckets=N answers for each metric (its own grid), in one response, each
// bucket field a column: a page of charts in a few requests instead of one per chart.
void HandleSeriesBatch(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  SeriesQuery q;
  if (auto error = ParseSeriesQuery(req, ctx.max_raw_points, &q)) return respond(std::move(*error));
  std::vector<std::string> metrics = req.Params("metric");
  if (metrics.empty()) return respond(HttpResponse::Error(400, "query parameter 'metric' (one or more) is required"));
  if (q.buckets == 0) return respond(HttpResponse::Error(400, "query parameter 'buckets' is required"));
  if (metrics.size() * q.runs.size() > kMaxSeriesPerQuery) {
    return respond(HttpResponse::Error(400, "more than " + std::to_string(kMaxSeriesPerQuery) +
                                                " series (runs × metrics) in one query"));
  }
  std::string body = "{\"x\":\"" + q.x_text + "\",\"metrics\":[";
  for (size_t m = 0; m < metrics.size(); ++m) {
    storage::BucketGrid grid;
    if (!GridOf(ctx, q, metrics[m], &grid)) return respond(HttpResponse::Error(400, "to is below from"));
    if (m) body.push_back(',');
    body += "{\"metric\":";
    AppendString(&body, metrics[m]);
    AppendDownsampled(ctx, q, metrics[m], grid, /*columns=*/true, &body);
    body.push_back('}');
  }
  body += "]}\n";
  respond(HttpResponse::Json(200, std::move(body)));
}

void HandleSuperseded(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  storage::RunInfo info;
  if (!RequireRun(ctx, req, respond, &info)) return;
  std::string metric = req.Param("metric");
  if (metric.empty()) return respond(HttpResponse::Error(400, "query parameter 'metric' is required"));
  std::vector<storage::SupersededPoint> points;
  Status s = ctx.engine.ReadSuperseded({info.project, info.id, metric}, &points);
  if (!s.ok()) return respond(HttpResponse::Error(HttpStatusOf(s), s.message()));
  std::string body = "{\"metric\":";
  AppendString(&body, metric);
  body += ",\"points\":[";
  for (size_t i = 0; i < points.size(); ++i) {
    if (i) body.push_back(',');
    body += "{\"timeline\":" + std::to_string(points[i].gen) + ",\"point\":";
    AppendPoint(&body, points[i].point);
    body.push_back('}');
  }
  body += "]}\n";
  respond(HttpResponse::Json(200, std::move(body)));
}

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

void RegisterQueryRoutes(HttpServer& server, ApiContext& ctx) {
  // Every query reads the store (chunks from disk, run search over every run): off the I/O threads.
  RouteOptions reads;
  reads.offload = true;
  auto add = [&](const char* path, void (*fn)(ApiContext&, HttpRequest&&, Responder)) {
    server.Route("GET", path, [&ctx, fn](HttpRequest&& req, Responder respond) {
      fn(ctx, std::move(req), std::move(respond));
    }, reads);
  };
  add("/api/v1/runs", HandleRuns);
  add("/api/v1/run", HandleRun);
  add("/api/v1/metrics", HandleMetrics);
  add("/api/v1/series", HandleSeries);
  add("/api/v1/series/batch", HandleSeriesBatch);
  add("/api/v1/series/superseded", HandleSuperseded);
  add("/api/v1/export", HandleExport);
}

}  // namespace trainwatch::api
