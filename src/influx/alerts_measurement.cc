#include "influx/alerts_measurement.h"

#include <algorithm>
#include <set>

#include "influx/influxql_conditions.h"

namespace trainwatch::influx {
namespace {

using Json = nlohmann::json;

const std::vector<std::string> kFields = {"step", "text", "time_end", "title", "value"};
const std::vector<std::string> kTags = {"kind", "metric",   "name",  "project",
                                        "run",  "severity", "status"};

Json ColumnValue(const AlertEvent& e, const std::string& column) {
  if (column == "text") return e.text;
  if (column == "title") return e.title;
  if (column == "value") return e.value;
  if (column == "step") return e.step;
  if (column == "time_end") return e.end_ms > 0 ? Json(e.end_ms) : Json(nullptr);
  auto it = e.tags.find(column);
  return it == e.tags.end() || it->second.empty() ? Json(nullptr) : Json(it->second);
}

}  // namespace

bool SelectsAlerts(const ql::SelectStatement& s) {
  return s.sources.size() == 1 && !s.sources[0].regex &&
         s.sources[0].measurement == kAlertsMeasurement;
}

Result<Json> SelectAlerts(const ql::SelectStatement& s, const std::string& default_db,
                          int64_t now_ns, const AlertSource& source,
                          const std::function<Json(int64_t)>& time_json) {
  const std::string db = s.sources[0].database.empty() ? default_db : s.sources[0].database;
  if (db.empty()) return Status::InvalidArgument("database name required");
  if (s.interval_ns || !s.group_by_tags.empty() || !s.group_by_tag_regexes.empty() ||
      s.group_by_all_tags) {
    return Status::InvalidArgument("trainwatch_alerts answers raw SELECTs only (no GROUP BY)");
  }
  std::vector<std::string> columns;
  for (const ql::Field& f : s.fields) {
    const ql::Expr& e = *f.expr;
    if (e.kind == ql::Expr::Kind::kWildcard) {
      std::set<std::string> all(kFields.begin(), kFields.end());
      all.insert(kTags.begin(), kTags.end());
      columns.insert(columns.end(), all.begin(), all.end());
    } else if (e.kind == ql::Expr::Kind::kVarRef) {
      columns.push_back(e.text);
    } else {
      return Status::InvalidArgument(
          "trainwatch_alerts answers raw SELECTs only: select fields and tags by name or *");
    }
  }
  Conditions where;
  TW_RETURN_IF_ERROR(SplitConditions(s.condition.get(), now_ns, &where));
  if (!source) return Json::array();  // no alerting: a measurement without points
  TW_ASSIGN_OR_RETURN(std::vector<AlertEvent> events, source(db));
  std::vector<const AlertEvent*> kept;
  for (const AlertEvent& e : events) {
    if (e.time_ns < where.from || e.time_ns > where.to) continue;
    FieldSeries as_series;
    as_series.measurement = kAlertsMeasurement;
    as_series.tags = e.tags;
    bool match = true;
    for (const ql::Expr* condition : where.tags) {
      TW_ASSIGN_OR_RETURN(bool m, Matches(*condition, as_series));
      match = match && m;
    }
    if (match) kept.push_back(&e);
  }
  std::stable_sort(kept.begin(), kept.end(), [&](const AlertEvent* a, const AlertEvent* b) {
    return s.descending ? a->time_ns > b->time_ns : a->time_ns < b->time_ns;
  });
  Json values = Json::array();
  for (size_t i = static_cast<size_t>(std::max<int64_t>(s.offset, 0)); i < kept.size(); ++i) {
    if (s.limit > 0 && values.size() >= static_cast<size_t>(s.limit)) break;
    Json row = Json::array({time_json(kept[i]->time_ns)});
    for (const std::string& c : columns) row.push_back(ColumnValue(*kept[i], c));
    values.push_back(std::move(row));
  }
  if (values.empty()) return Json::array();
  Json names = Json::array({"time"});
  for (const std::string& c : columns) names.push_back(c);
  // Aliases name their columns (`SELECT "text" AS "t"`).
  size_t at = 1;
  for (const ql::Field& f : s.fields) {
    if (f.expr->kind == ql::Expr::Kind::kWildcard) {
      at += kFields.size() + kTags.size();
      continue;
    }
    if (!f.alias.empty()) names[at] = f.alias;
    ++at;
  }
  return Json::array({Json{{"name", kAlertsMeasurement}, {"columns", names}, {"values", values}}});
}

}  // namespace trainwatch::influx
