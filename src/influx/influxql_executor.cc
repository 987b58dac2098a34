#include "influx/influxql_executor.h"

#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "influx/influx_catalog.h"
#include "influx/influxql_aggregate.h"
#include "influx/influxql_conditions.h"
#include "influx/influxql_parser.h"

namespace trainwatch::influx {
namespace {

using ql::Expr;
using Json = nlohmann::json;

// --- output ---

Json TimeJson(int64_t ns, const std::string& epoch) {
  if (!epoch.empty()) {
    int64_t per = 1;
    if (epoch == "u" || epoch == "\xc2\xb5")
      per = 1000;
    else if (epoch == "ms")
      per = 1000 * 1000;
    else if (epoch == "s")
      per = kSecondNs;
    else if (epoch == "m")
      per = 60 * kSecondNs;
    else if (epoch == "h")
      per = 3600 * kSecondNs;
    return ns / per - (ns % per < 0 ? 1 : 0);
  }
  int64_t secs = ns / kSecondNs, frac = ns % kSecondNs;
  if (frac < 0) {
    frac += kSecondNs;
    --secs;
  }
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[64];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out = buffer;
  if (frac) {
    char digits[16];
    std::snprintf(digits, sizeof digits, ".%09lld", static_cast<long long>(frac));
    std::string f = digits;
    while (f.back() == '0') f.pop_back();
    out += f;
  }
  return out + "Z";
}

Json ValueJson(const std::optional<double>& v, const Column& c) {
  if (!v || std::isnan(*v)) return nullptr;
  if (c.function == "count" || (c.field == "step" && c.function.empty()))
    return static_cast<int64_t>(*v);
  return *v;
}

// --- SELECT ---

class SelectRun {
 public:
  SelectRun(const ql::SelectStatement& s, const InfluxQueryOptions& o, const query::Querier& q)
      : s_(s), options_(o), querier_(q) {}

  Result<Json> Run() {
    TW_RETURN_IF_ERROR(SplitConditions(s_.condition.get(), Now(), &where_));
    TW_RETURN_IF_ERROR(Columns());
    Json series = Json::array();
    for (const ql::Source& source : s_.sources) {
      const std::string db = source.database.empty() ? options_.database : source.database;
      if (db.empty()) return Status::InvalidArgument("database name required");
      Result<std::vector<FieldSeries>> catalog = LoadCatalog(querier_, db);
      if (!catalog.ok()) return catalog.status();
      for (const std::string& m : Measurements(*catalog, source)) {
        TW_RETURN_IF_ERROR(Measurement(db, m, *catalog, &series));
      }
    }
    // SLIMIT / SOFFSET page the series.
    if (s_.soffset > 0 || s_.slimit > 0) {
      Json paged = Json::array();
      for (size_t i = static_cast<size_t>(s_.soffset); i < series.size(); ++i) {
        if (s_.slimit > 0 && paged.size() >= static_cast<size_t>(s_.slimit)) break;
        paged.push_back(series[i]);
      }
      series = std::move(paged);
    }
    return series;
  }

 private:
  int64_t Now() const { return static_cast<int64_t>(options_.now * 1e6) * 1000; }

  Status Columns() {
    bool aggregate = false, raw = false;
    std::map<std::string, int> seen;
    for (const ql::Field& f : s_.fields) {
      Column c;
      const Expr& e = *f.expr;
      if (e.kind == Expr::Kind::kWildcard) {
        star_ = true;
        raw = true;
        continue;
      }
      if (e.kind == Expr::Kind::kVarRef) {
        c.field = e.text;
        raw = true;
      } else if (e.kind == Expr::Kind::kCall && kAggregates.contains(e.text)) {
        if (e.args.empty() || e.args[0]->kind != Expr::Kind::kVarRef) {
          return Status::InvalidArgument("expected field argument in " + e.text + "()");
        }
        c.field = e.args[0]->text;
        c.function = e.text;
        if (c.function == "percentile") {
          if (e.args.size() != 2 ||
              (e.args[1]->kind != Expr::Kind::kInteger && e.args[1]->kind != Expr::Kind::kNumber)) {
            return Status::InvalidArgument("percentile() takes a field and a number");
          }
          c.arg = e.args[1]->kind == Expr::Kind::kInteger ? static_cast<double>(e.args[1]->integer)
                                                          : e.args[1]->number;
        } else if (e.args.size() != 1) {
          return Status::InvalidArgument("invalid number of arguments for " + e.text +
                                         ", expected 1");
        }
        aggregate = true;
      } else {
        return Status::InvalidArgument(
            "unsupported expression in SELECT (fields, tags and the functions " +
            std::string("mean, median, min, max, first, last, sum, count, spread, "
                        "stddev, percentile)"));
      }
      c.name = f.alias.empty() ? (c.function.empty() ? c.field : c.function) : f.alias;
      if (int n = seen[c.name]++; n > 0) c.name += "_" + std::to_string(n);
      columns_.push_back(std::move(c));
    }
    if (aggregate && raw)
      return Status::InvalidArgument("mixing aggregate and non-aggregate queries is not supported");
    aggregate_ = aggregate;
    if (s_.interval_ns && !aggregate)
      return Status::InvalidArgument("GROUP BY requires at least one aggregate function");
    return Status::Ok();
  }

  std::vector<std::string> Measurements(const std::vector<FieldSeries>& catalog,
                                        const ql::Source& source) const {
    std::set<std::string> names;
    std::unique_ptr<RE2> re;
    if (source.regex) re = std::make_unique<RE2>(*source.regex, RE2::Quiet);
    for (const FieldSeries& s : catalog) {
      if (re ? RE2::PartialMatch(s.measurement, *re) : s.measurement == source.measurement)
        names.insert(s.measurement);
    }
    return {names.begin(), names.end()};
  }

  Status Measurement(const std::string& db, const std::string& measurement,
                     const std::vector<FieldSeries>& catalog, Json* out) {
    // The measurement's series that pass the tag conditions, grouped by the GROUP BY tags.
    std::set<std::string> fields;
    std::set<std::string> tag_keys;
    std::vector<const FieldSeries*> matched;
    for (const FieldSeries& s : catalog) {
      if (s.measurement != measurement) continue;
      bool ok = true;
      for (const Expr* e : where_.tags) {
        Result<bool> m = Matches(*e, s);
        if (!m.ok()) return m.status();
        ok = ok && *m;
      }
      if (!ok) continue;
      matched.push_back(&s);
      fields.insert(s.field);
      for (const auto& [k, v] : s.tags) tag_keys.insert(k);
    }
    std::vector<Column> columns = columns_;
    if (star_) {
      for (const std::string& f : fields) columns.push_back({f, f, "", 0});
    }
    std::vector<std::string> group_keys = s_.group_by_tags;
    if (s_.group_by_all_tags) group_keys.assign(tag_keys.begin(), tag_keys.end());
    for (const std::string& re_text : s_.group_by_tag_regexes) {
      RE2 re(re_text, RE2::Quiet);
      for (const std::string& k : tag_keys) {
        if (RE2::PartialMatch(k, re)) group_keys.push_back(k);
      }
    }
    std::sort(group_keys.begin(), group_keys.end());
    group_keys.erase(std::unique(group_keys.begin(), group_keys.end()), group_keys.end());
    std::map<std::vector<std::string>, std::vector<const FieldSeries*>> groups;
    for (const FieldSeries* s : matched) {
      std::vector<std::string> key;
      for (const std::string& k : group_keys) {
        auto it = s->tags.find(k);
        key.push_back(it == s->tags.end() ? "" : it->second);
      }
      groups[key].push_back(s);
    }
    for (const auto& [key, members] : groups) {
      Result<Json> values = GroupValues(db, members, columns);
      if (!values.ok()) return values.status();
      if (values->empty()) continue;
      Json series = {{"name", measurement}};
      if (!group_keys.empty()) {
        Json tags = Json::object();
        for (size_t i = 0; i < group_keys.size(); ++i) tags[group_keys[i]] = key[i];
        series["tags"] = tags;
      }
      Json names = Json::array({"time"});
      for (const Column& c : columns) names.push_back(c.name);
      series["columns"] = names;
      series["values"] = std::move(*values);
      out->push_back(std::move(series));
    }
    return Status::Ok();
  }

  // The points of one column over a group's series, in time order.
  Result<std::vector<TimedValue>> Points(const std::string& db,
                                         const std::vector<const FieldSeries*>& members,
                                         const std::string& field) {
    std::vector<TimedValue> out;
    for (const FieldSeries* s : members) {
      if (s->field != field) continue;
      query::RawRequest request;
      request.selection.project = db;
      request.selection.runs = {s->run};
      request.selection.axis = query::XAxis::kWallTime;
      request.selection.from =
          where_.from == kMinTime ? -INFINITY : static_cast<double>(where_.from) / 1e9 - 1e-6;
      request.selection.to =
          where_.to == kMaxTime ? INFINITY : static_cast<double>(where_.to) / 1e9 + 1e-6;
      request.metric = s->metric;
      request.limit = options_.max_points - std::min(read_, options_.max_points);
      std::vector<query::RawSeries> raw = querier_.ReadRaw(request);
      for (const query::RawSeries& r : raw) {
        if (!r.status.ok()) continue;  // a series deleted since the catalog was read
        read_ += r.read;
        if (r.truncated)
          return Status::InvalidArgument("the query reads more than " +
                                         std::to_string(options_.max_points) +
                                         " points: narrow its time range");
        for (const storage::Point& p : r.points) {
          const int64_t t =
              static_cast<int64_t>(std::llround(p.time * 1e6)) * 1000;  // µs: what a double holds
          if (t < where_.from || t > where_.to) continue;
          const double v = s->is_step ? static_cast<double>(p.step) : p.value;
          if (!std::isnan(v)) out.push_back({t, v});
        }
      }
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const TimedValue& a, const TimedValue& b) { return a.time < b.time; });
    return out;
  }

  Result<Json> GroupValues(const std::string& db, const std::vector<const FieldSeries*>& members,
                           const std::vector<Column>& columns) {
    std::vector<std::vector<TimedValue>> points;
    for (const Column& c : columns) {
      Result<std::vector<TimedValue>> p = Points(db, members, c.field);
      if (!p.ok()) return p.status();
      points.push_back(std::move(*p));
    }
    Json rows = Json::array();
    if (!aggregate_) {
      RawRows(columns, points, &rows);
    } else if (s_.interval_ns) {
      BucketRows(columns, points, &rows);
    } else {
      Json row = Json::array();
      int64_t at = where_.from == kMinTime ? 0 : where_.from;
      bool any = false;
      Json values = Json::array();
      for (size_t i = 0; i < columns.size(); ++i) {
        int64_t selected = at;
        std::optional<double> v = Aggregate(columns[i], points[i], &selected);
        any = any || v.has_value();
        // A selector alone answers with the time of the point it chose, as in InfluxDB.
        if (columns.size() == 1 && kSelectors.contains(columns[i].function)) at = selected;
        values.push_back(ValueJson(v, columns[i]));
      }
      if (!any) return rows;
      row.push_back(TimeJson(at, options_.epoch));
      for (auto& v : values) row.push_back(std::move(v));
      rows.push_back(std::move(row));
    }
    return Page(std::move(rows));
  }

  void RawRows(const std::vector<Column>& columns,
               const std::vector<std::vector<TimedValue>>& points, Json* rows) {
    std::map<int64_t, std::vector<std::optional<double>>> by_time;
    for (size_t i = 0; i < columns.size(); ++i) {
      for (const TimedValue& p : points[i]) {
        auto& row = by_time[p.time];
        row.resize(columns.size());
        row[i] = p.value;
      }
    }
    for (auto& [t, values] : by_time) {
      values.resize(columns.size());
      Json row = Json::array({TimeJson(t, options_.epoch)});
      for (size_t i = 0; i < columns.size(); ++i) row.push_back(ValueJson(values[i], columns[i]));
      rows->push_back(std::move(row));
    }
  }

  int64_t BucketStart(int64_t t) const {
    const int64_t interval = *s_.interval_ns;
    int64_t shifted = t - s_.offset_ns;
    int64_t q = shifted / interval - (shifted % interval < 0 ? 1 : 0);
    return q * interval + s_.offset_ns;
  }

  void BucketRows(const std::vector<Column>& columns,
                  const std::vector<std::vector<TimedValue>>& points, Json* rows) {
    int64_t lo = kMaxTime, hi = kMinTime;
    for (const auto& p : points) {
      if (p.empty()) continue;
      lo = std::min(lo, p.front().time);
      hi = std::max(hi, p.back().time);
    }
    if (where_.from != kMinTime) lo = where_.from;
    if (where_.to != kMaxTime && where_.to < kMaxTime) hi = where_.to;
    if (lo > hi) return;
    const int64_t interval = *s_.interval_ns;
    const int64_t first = BucketStart(lo), last = BucketStart(hi);
    const size_t count = static_cast<size_t>((last - first) / interval) + 1;
    if (count > 1'000'000) return;  // refused as too many points below, by InfluxDB's rule too
    std::vector<std::vector<std::optional<double>>> cells(
        count, std::vector<std::optional<double>>(columns.size()));
    for (size_t c = 0; c < columns.size(); ++c) {
      size_t i = 0;
      const auto& p = points[c];
      while (i < p.size()) {
        const int64_t b = BucketStart(p[i].time);
        std::vector<TimedValue> bucket;
        while (i < p.size() && BucketStart(p[i].time) == b) bucket.push_back(p[i++]);
        if (b < first || b > last) continue;
        int64_t unused = 0;
        cells[static_cast<size_t>((b - first) / interval)][c] =
            Aggregate(columns[c], bucket, &unused);
      }
    }
    Fill(&cells, columns.size());
    for (size_t b = 0; b < count; ++b) {
      bool empty = true;
      for (const auto& v : cells[b]) empty = empty && !v;
      if (empty && s_.fill == ql::Fill::kNone) continue;
      Json row =
          Json::array({TimeJson(first + static_cast<int64_t>(b) * interval, options_.epoch)});
      for (size_t c = 0; c < columns.size(); ++c) row.push_back(ValueJson(cells[b][c], columns[c]));
      rows->push_back(std::move(row));
    }
  }

  void Fill(std::vector<std::vector<std::optional<double>>>* cells, size_t width) const {
    for (size_t c = 0; c < width; ++c) {
      std::optional<double> previous;
      std::optional<size_t> previous_at;
      for (size_t b = 0; b < cells->size(); ++b) {
        std::optional<double>& v = (*cells)[b][c];
        if (v) {
          if (s_.fill == ql::Fill::kLinear && previous_at && b - *previous_at > 1) {
            for (size_t k = *previous_at + 1; k < b; ++k) {
              const double f =
                  static_cast<double>(k - *previous_at) / static_cast<double>(b - *previous_at);
              (*cells)[k][c] = *previous + (*v - *previous) * f;
            }
          }
          previous = v;
          previous_at = b;
          continue;
        }
        if (s_.fill == ql::Fill::kNumber) v = s_.fill_value;
        if (s_.fill == ql::Fill::kPrevious) v = previous;
      }
    }
  }

  // ORDER BY time DESC, OFFSET and LIMIT on one series' rows.
  Json Page(Json rows) const {
    if (s_.descending) std::reverse(rows.begin(), rows.end());
    if (s_.offset == 0 && s_.limit == 0) return rows;
    Json out = Json::array();
    for (size_t i = static_cast<size_t>(s_.offset); i < rows.size(); ++i) {
      if (s_.limit > 0 && out.size() >= static_cast<size_t>(s_.limit)) break;
      out.push_back(rows[i]);
    }
    return out;
  }

  const ql::SelectStatement& s_;
  const InfluxQueryOptions& options_;
  const query::Querier& querier_;
  Conditions where_;
  std::vector<Column> columns_;
  bool star_ = false;
  bool aggregate_ = false;
  size_t read_ = 0;
};

// --- SHOW ---

// A series of a SHOW answer; InfluxDB leaves the name out of the nameless ones.
Json NamedValues(const std::string& name, const Json& columns, const Json& values) {
  Json series = {{"columns", columns}, {"values", values}};
  if (!name.empty()) series["name"] = name;
  return series;
}

Result<std::vector<std::string>> Projects(const query::Querier& querier) {
  query::RunSearch all;
  all.limit = size_t{1} << 30;
  Result<query::RunPage> page = querier.SearchRuns(all);
  if (!page.ok()) return page.status();
  std::set<std::string> projects;
  for (const query::RunRow& row : page->rows) projects.insert(row.info.project);
  return std::vector<std::string>(projects.begin(), projects.end());
}

// The catalog's series of `sources` (all when none) that pass the WHERE tag conditions.
Result<std::vector<FieldSeries>> Selected(const ql::ShowStatement& s,
                                          const InfluxQueryOptions& options,
                                          const query::Querier& querier) {
  const std::string db = s.database.empty() ? options.database : s.database;
  if (db.empty()) return Status::InvalidArgument("database name required");
  Result<std::vector<FieldSeries>> catalog = LoadCatalog(querier, db);
  if (!catalog.ok()) return catalog;
  Conditions where;
  TW_RETURN_IF_ERROR(SplitConditions(s.condition.get(), 0, &where));
  std::vector<FieldSeries> out;
  for (FieldSeries& series : *catalog) {
    bool keep = s.sources.empty();
    for (const ql::Source& src : s.sources) {
      if (src.regex ? RE2::PartialMatch(series.measurement, RE2(*src.regex, RE2::Quiet))
                    : series.measurement == src.measurement) {
        keep = true;
      }
    }
    for (const Expr* e : where.tags) {
      Result<bool> m = Matches(*e, series);
      if (!m.ok()) return m.status();
      keep = keep && *m;
    }
    if (keep) out.push_back(std::move(series));
  }
  return out;
}

Json Limit(Json values, int64_t limit, int64_t offset) {
  if (limit == 0 && offset == 0) return values;
  Json out = Json::array();
  for (size_t i = static_cast<size_t>(offset); i < values.size(); ++i) {
    if (limit > 0 && out.size() >= static_cast<size_t>(limit)) break;
    out.push_back(values[i]);
  }
  return out;
}

Result<Json> Show(const ql::ShowStatement& s, const InfluxQueryOptions& options,
                  const query::Querier& querier) {
  using What = ql::ShowStatement::What;
  Json series = Json::array();
  if (s.what == What::kDatabases) {
    Result<std::vector<std::string>> projects = Projects(querier);
    if (!projects.ok()) return projects.status();
    Json values = Json::array();
    for (const std::string& p : *projects) values.push_back({p});
    series.push_back(NamedValues("databases", {"name"}, values));
    return series;
  }
  if (s.what == What::kRetentionPolicies) {
    series.push_back(
        NamedValues("", {"name", "duration", "shardGroupDuration", "replicaN", "default"},
                    Json::array({Json::array({"autogen", "0s", "168h0m0s", 1, true})})));
    return series;
  }
  Result<std::vector<FieldSeries>> selected = Selected(s, options, querier);
  if (!selected.ok()) return selected.status();
  std::map<std::string, std::set<std::string>>
      per_measurement;  // measurement -> keys/fields/values
  std::map<std::string, std::set<std::pair<std::string, std::string>>> tag_values;
  std::unique_ptr<RE2> key_re;
  if (!s.key_regex.empty()) key_re = std::make_unique<RE2>(s.key_regex, RE2::Quiet);
  for (const FieldSeries& f : *selected) {
    switch (s.what) {
      case What::kMeasurements:
        per_measurement[""].insert(f.measurement);
        break;
      case What::kFieldKeys:
        per_measurement[f.measurement].insert(f.field);
        break;
      case What::kTagKeys:
        per_measurement[f.measurement];
        for (const auto& [k, v] : f.tags) per_measurement[f.measurement].insert(k);
        break;
      case What::kSeries: {
        std::string key = f.measurement;
        for (const auto& [k, v] : f.tags) key += "," + k + "=" + v;
        per_measurement[""].insert(key);
        break;
      }
      case What::kTagValues:
        for (const auto& [k, v] : f.tags) {
          const bool listed = std::find(s.keys.begin(), s.keys.end(), k) != s.keys.end();
          bool take = s.key_op == "=" || s.key_op == "IN" ? listed
                      : s.key_op == "!="                  ? !listed
                      : s.key_op == "=~"                  ? RE2::PartialMatch(k, *key_re)
                                                          : !RE2::PartialMatch(k, *key_re);
          if (take) tag_values[f.measurement].insert({k, v});
        }
        break;
      default:
        break;
    }
  }
  if (s.what == What::kMeasurements) {
    std::unique_ptr<RE2> re;
    if (s.measurement_operand && s.measurement_operand->kind == Expr::Kind::kRegex) {
      re = std::make_unique<RE2>(s.measurement_operand->text, RE2::Quiet);
    }
    Json values = Json::array();
    for (const std::string& m : per_measurement[""]) {
      bool keep = true;
      if (s.measurement_op == "=~" || s.measurement_op == "!~")
        keep = RE2::PartialMatch(m, *re) == (s.measurement_op == "=~");
      if (s.measurement_op == "=") keep = m == s.measurement_operand->text;
      if (s.measurement_op == "!=") keep = m != s.measurement_operand->text;
      if (keep) values.push_back({m});
    }
    values = Limit(std::move(values), s.limit, s.offset);
    if (!values.empty()) series.push_back(NamedValues("measurements", {"name"}, values));
    return series;
  }
  if (s.what == What::kSeries) {
    Json values = Json::array();
    for (const std::string& key : per_measurement[""]) values.push_back({key});
    values = Limit(std::move(values), s.limit, s.offset);
    if (!values.empty()) series.push_back(NamedValues("", {"key"}, values));
    return series;
  }
  if (s.what == What::kTagValues) {
    for (const auto& [m, pairs] : tag_values) {
      Json values = Json::array();
      for (const auto& [k, v] : pairs) values.push_back({k, v});
      values = Limit(std::move(values), s.limit, s.offset);
      if (!values.empty()) series.push_back(NamedValues(m, {"key", "value"}, values));
    }
    return series;
  }
  for (const auto& [m, names] : per_measurement) {
    Json values = Json::array();
    for (const std::string& n : names) {
      if (s.what == What::kFieldKeys)
        values.push_back({n, n == "step" ? "integer" : "float"});
      else
        values.push_back({n});
    }
    values = Limit(std::move(values), s.limit, s.offset);
    if (values.empty()) continue;
    series.push_back(NamedValues(
        m, s.what == What::kFieldKeys ? Json{"fieldKey", "fieldType"} : Json{"tagKey"}, values));
  }
  return series;
}

}  // namespace

std::string ExecuteInfluxQL(const std::vector<ql::Statement>& statements,
                            const InfluxQueryOptions& options, const query::Querier& querier) {
  if (statements.empty()) return "{}\n";  // InfluxDB's answer to a query of only ';'
  Json results = Json::array();
  for (size_t i = 0; i < statements.size(); ++i) {
    Json result = {{"statement_id", i}};
    Result<Json> series = Status::Internal("unreached");
    if (const auto* select = std::get_if<ql::SelectStatement>(&statements[i])) {
      series = SelectsAlerts(*select)
                   ? SelectAlerts(*select, options.database,
                                  static_cast<int64_t>(options.now * 1e6) * 1000, options.alerts,
                                  [&](int64_t ns) { return TimeJson(ns, options.epoch); })
                   : SelectRun(*select, options, querier).Run();
    } else if (const auto* show = std::get_if<ql::ShowStatement>(&statements[i])) {
      series = Show(*show, options, querier);
    } else {
      series = Json::array();  // CREATE DATABASE: a project exists once written to
    }
    if (!series.ok()) {
      result["error"] = series.status().message();
    } else if (!series->empty()) {
      result["series"] = std::move(*series);
    }
    results.push_back(std::move(result));
  }
  return Json{{"results", results}}.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace trainwatch::influx
