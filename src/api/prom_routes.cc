// Prometheus's HTTP query API under /prometheus/api/v1/ (docs/prometheus.md), for Grafana's
// Prometheus data source and promtool: query, query_range, labels, label/<name>/values, series,
// metadata and status/buildinfo, in Prometheus's envelope ({"status": "success", "data": ...} or
// {"status": "error", "errorType", "error"}); and remote read (POST read: snappy-compressed
// protobuf), through which a Prometheus server evaluates its alert rules over trainwatch's series.
// Series are trainwatch's (prom/prom_source.h).
#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include <snappy.h>

#include "api/http_target.h"
#include "api/routes.h"
#include "influx/influxql_conditions.h"
#include "prom/prom_source.h"
#include "prom/promql_parser.h"
#include "prometheus/remote.pb.h"

namespace trainwatch::api {
namespace {

using Json = nlohmann::json;
constexpr const char* kPrefix = "/prometheus/api/v1/";
constexpr int64_t kMissing = std::numeric_limits<int64_t>::min();  // a time parameter not given

HttpResponse Success(Json data) {
  Json body = {{"status", "success"}, {"data", std::move(data)}};
  return HttpResponse::Json(200, body.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
}

// bad_data (400) for what the request got wrong, execution (422) for what evaluation refused.
HttpResponse Failure(const std::string& type, const std::string& message) {
  Json body = {{"status", "error"}, {"errorType", type}, {"error", message}};
  return HttpResponse::Json(type == "bad_data" ? 400 : 422,
                            body.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
}

// A sample value as Prometheus writes it: the shortest decimal, NaN, +Inf, -Inf.
std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buffer[400];
  auto r = std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::fixed);
  return std::string(buffer, r.ptr);
}

Json Pair(int64_t ms, double v) {
  return Json::array({static_cast<double>(ms) / 1000, FormatValue(v)});
}

// Parameters from the URL, and from a POST's form body (Prometheus's clients POST forms).
std::vector<std::string> Params(const HttpRequest& req, const std::string& name) {
  std::vector<std::string> out = req.Params(name);
  if (req.method != "POST") return out;
  const auto form = ParseQueryString(req.body);
  for (auto [it, end] = form.equal_range(name); it != end; ++it) out.push_back(it->second);
  return out;
}

std::string Param(const HttpRequest& req, const std::string& name) {
  std::vector<std::string> v = Params(req, name);
  return v.empty() ? "" : v.front();
}

// A time parameter: unix seconds (fractions allowed) or RFC 3339; `fallback` when absent.
Result<int64_t> TimeParam(const HttpRequest& req, const std::string& name, int64_t fallback) {
  const std::string text = Param(req, name);
  if (text.empty()) return fallback;
  double seconds = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (r.ec == std::errc() && r.ptr == text.data() + text.size())
    return std::llround(seconds * 1000);
  if (std::optional<int64_t> ns = influx::ParseRfc3339(text)) return *ns / 1'000'000;
  return Status::InvalidArgument("invalid parameter \"" + name + "\": cannot parse \"" + text +
                                 "\" to a valid timestamp");
}

// A step: seconds (fractions allowed) or a duration ("15s").
Result<int64_t> StepParam(const HttpRequest& req) {
  const std::string text = Param(req, "step");
  double seconds = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (!text.empty() && r.ec == std::errc() && r.ptr == text.data() + text.size())
    return std::llround(seconds * 1000);
  Result<int64_t> d = prom::ParsePromDuration(text);
  if (!d.ok())
    return Status::InvalidArgument("invalid parameter \"step\": cannot parse \"" + text +
                                   "\" to a valid duration");
  return d;
}

Json LabelsJson(const prom::Labels& labels) {
  Json m = Json::object();
  for (const auto& [k, v] : labels) m[k] = v;
  return m;
}

void HandleQuery(ApiContext& ctx, HttpRequest&& req, Responder respond, bool range) {
  Result<prom::ExprPtr> expr = prom::ParsePromQL(Param(req, "query"));
  if (!expr.ok()) {
    respond(Failure("bad_data", "invalid parameter \"query\": " + expr.status().message()));
    return;
  }
  prom::QuerierSource source(ctx.querier, req.principal.projects);
  const int64_t now = std::llround(ctx.clock.NowUnixSeconds() * 1000);
  if (!range) {
    Result<int64_t> t = TimeParam(req, "time", now);
    if (!t.ok()) return respond(Failure("bad_data", t.status().message()));
    Result<prom::InstantValue> v = prom::EvalInstant(**expr, *t, source);
    if (!v.ok()) return respond(Failure("execution", v.status().message()));
    if (v->is_scalar)
      return respond(Success({{"resultType", "scalar"}, {"result", Pair(*t, v->scalar)}}));
    Json result = Json::array();
    for (const prom::Sample& s : v->vector) {
      result.push_back({{"metric", LabelsJson(s.labels)}, {"value", Pair(*t, s.value)}});
    }
    return respond(Success({{"resultType", "vector"}, {"result", result}}));
  }
  Result<int64_t> start = TimeParam(req, "start", kMissing), end = TimeParam(req, "end", kMissing);
  if (!start.ok()) return respond(Failure("bad_data", start.status().message()));
  if (!end.ok()) return respond(Failure("bad_data", end.status().message()));
  if (*start == kMissing || *end == kMissing) {
    return respond(Failure("bad_data", std::string("invalid parameter \"") +
                                           (*start == kMissing ? "start" : "end") +
                                           "\": cannot parse \"\" to a valid timestamp"));
  }
  if (*end < *start)
    return respond(Failure(
        "bad_data", "invalid parameter \"end\": end timestamp must not be before start time"));
  Result<int64_t> step = StepParam(req);
  if (!step.ok()) return respond(Failure("bad_data", step.status().message()));
  bool scalar = false;
  Result<std::vector<prom::RangeSeries>> series =
      prom::EvalRange(**expr, *start, *end, *step, source, &scalar);
  if (!series.ok()) return respond(Failure("bad_data", series.status().message()));
  Json result = Json::array();
  for (const prom::RangeSeries& s : *series) {
    Json values = Json::array();
    for (const auto& [t, v] : s.points) values.push_back(Pair(t, v));
    result.push_back({{"metric", LabelsJson(s.labels)}, {"values", values}});
  }
  respond(Success({{"resultType", "matrix"}, {"result", result}}));
}

// The series `match[]` selects (every series without one).
Result<std::vector<prom::Labels>> Matched(ApiContext& ctx, const HttpRequest& req) {
  prom::QuerierSource source(ctx.querier, req.principal.projects);
  std::vector<std::string> matches = Params(req, "match[]");
  if (matches.empty()) return source.Labelled({});
  std::set<prom::Labels> out;
  for (const std::string& m : matches) {
    Result<prom::ExprPtr> e = prom::ParsePromQL(m);
    if (!e.ok())
      return Status::InvalidArgument("invalid parameter \"match[]\": " + e.status().message());
    if ((*e)->kind != prom::Expr::Kind::kVectorSelector) {
      return Status::InvalidArgument("invalid parameter \"match[]\": expected a vector selector");
    }
    Result<std::vector<prom::Labels>> labels = source.Labelled((*e)->matchers);
    if (!labels.ok()) return labels.status();
    out.insert(labels->begin(), labels->end());
  }
  return std::vector<prom::Labels>(out.begin(), out.end());
}

// The most a remote read request may inflate to (its queries are a few hundred bytes).
constexpr size_t kMaxReadRequestBytes = 16 << 20;

HttpResponse PlainError(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = message + "\n";
  return r;
}

// Remote read: every query's series with their samples in [start, end], as SAMPLES.
void HandleRemoteRead(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  size_t length = 0;
  std::string raw;
  if (!snappy::GetUncompressedLength(req.body.data(), req.body.size(), &length) ||
      length > kMaxReadRequestBytes ||
      !snappy::Uncompress(req.body.data(), req.body.size(), &raw)) {
    return respond(PlainError(400, "the body is not a snappy-compressed remote read request"));
  }
  prometheus::ReadRequest request;
  if (!request.ParseFromString(raw))
    return respond(PlainError(400, "the body is not a prometheus.ReadRequest"));
  prom::QuerierSource source(ctx.querier, req.principal.projects);
  prometheus::ReadResponse response;
  for (const prometheus::Query& q : request.queries()) {
    std::vector<prom::LabelMatcher> matchers;
    for (const prometheus::LabelMatcher& m : q.matchers()) {
      using Op = prom::LabelMatcher::Op;
      const Op op = m.type() == prometheus::LabelMatcher::NEQ   ? Op::kNotEqual
                    : m.type() == prometheus::LabelMatcher::RE  ? Op::kRegex
                    : m.type() == prometheus::LabelMatcher::NRE ? Op::kNotRegex
                                                                : Op::kEqual;
      matchers.push_back({m.name(), op, m.value()});
    }
    Result<std::vector<prom::SeriesPoints>> series =
        source.Select(matchers, q.start_timestamp_ms(), q.end_timestamp_ms());
    if (!series.ok()) return respond(PlainError(400, series.status().message()));
    prometheus::QueryResult* result = response.add_results();
    for (const prom::SeriesPoints& s : *series) {
      prometheus::TimeSeries* ts = result->add_timeseries();
      for (const auto& [name, value] : s.labels) {
        prometheus::Label* l = ts->add_labels();
        l->set_name(name);
        l->set_value(value);
      }
      for (const auto& [t, v] : s.points) {
        prometheus::Sample* sample = ts->add_samples();
        sample->set_timestamp(t);
        sample->set_value(v);
      }
    }
  }
  HttpResponse r;
  r.status = 200;
  r.content_type = "application/x-protobuf";
  r.headers.emplace_back("Content-Encoding", "snappy");
  snappy::Compress(response.SerializeAsString().data(), response.ByteSizeLong(), &r.body);
  respond(std::move(r));
}

void HandleRead(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  const std::string what = req.path.substr(std::string(kPrefix).size());
  if (what == "read" && req.method == "POST")
    return HandleRemoteRead(ctx, std::move(req), std::move(respond));
  if (what == "query" || what == "query_range")
    return HandleQuery(ctx, std::move(req), std::move(respond), what == "query_range");
  if (what == "status/buildinfo") {
    return respond(Success({{"version", "2.42.0"},
                            {"revision", "trainwatch"},
                            {"branch", ""},
                            {"buildUser", ""},
                            {"buildDate", ""},
                            {"goVersion", ""}}));
  }
  if (what == "metadata") {
    return respond(
        Success({{prom::kMetricName,
                  Json::array({{{"type", "gauge"},
                                {"help", "trainwatch's scalar series (docs/prometheus.md)"},
                                {"unit", ""}}})}}));
  }
  Result<std::vector<prom::Labels>> series = Matched(ctx, req);
  if (!series.ok()) return respond(Failure("bad_data", series.status().message()));
  if (what == "series") {
    Json out = Json::array();
    for (const prom::Labels& l : *series) out.push_back(LabelsJson(l));
    return respond(Success(out));
  }
  if (what == "labels") {
    std::set<std::string> names;
    for (const prom::Labels& l : *series) {
      for (const auto& [k, v] : l) names.insert(k);
    }
    return respond(Success(Json(std::vector<std::string>(names.begin(), names.end()))));
  }
  if (what.starts_with("label/") && what.ends_with("/values")) {
    const std::string name = what.substr(6, what.size() - 6 - 7);
    std::set<std::string> values;
    for (const prom::Labels& l : *series) {
      auto it = l.find(name);
      if (it != l.end()) values.insert(it->second);
    }
    return respond(Success(Json(std::vector<std::string>(values.begin(), values.end()))));
  }
  respond(HttpResponse::Error(404, "no such Prometheus API endpoint: " + what));
}

}  // namespace

void RegisterPromRoutes(HttpServer& server, ApiContext& ctx) {
  RouteOptions read = RouteOptions::Scoped(auth::Scope::kRead, /*projects_in_body=*/true);
  read.offload = true;  // queries read the store
  read.body_types = {"application/x-www-form-urlencoded", "application/x-protobuf", ""};
  for (const char* method : {"GET", "POST"}) {
    server.RoutePrefix(
        method, kPrefix,
        [&ctx](HttpRequest&& req, Responder respond) {
          HandleRead(ctx, std::move(req), std::move(respond));
        },
        read);
  }
}

}  // namespace trainwatch::api
