#include "influx/point_mapping.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>
#include <utility>

namespace trainwatch::influx {
namespace {

// One metric's (step, value) pairs in arrival order; Emit sorts them and keeps the last per step.
using Values = std::vector<std::pair<int64_t, double>>;

// One run's points of a body: a row per step (the first point's time), each metric's values,
// texts in arrival order.
struct RunRows {
  bool sampled = false;
  std::string host;
  std::map<int64_t, double> time_of_step;
  std::map<std::string, Values> metrics;  // by name; nodes never move
  // Lines of one measurement, metric tag and other tags share their metrics' names but for the
  // field: the names are built once per such prefix and field, not once per value. The field
  // keys point into the parsed body, which outlives the mapping.
  std::unordered_map<std::string, std::unordered_map<std::string_view, Values*>> by_prefix;
  std::vector<v1::Text> texts;
};

std::string Tag(const Point& p, std::string_view key) {
  for (const auto& [k, v] : p.tags) {
    if (k == key) return std::string(v);
  }
  return "";
}

std::string RunOf(const Point& p, const PointMapping& m) {
  for (const std::string& tag : m.run_tags) {
    if (std::string run = Tag(p, tag); !run.empty()) return run;
  }
  if (std::string host = Tag(p, m.host_tag); !host.empty()) return "host:" + host;
  return std::string(p.measurement);
}

// "{k=v,...}" of the tags that are not the run, metric or host tag, in key order ("" if none).
std::string OtherTags(const Point& p, const PointMapping& m) {
  std::vector<std::pair<std::string_view, std::string_view>> rest;
  for (const auto& tag : p.tags) {
    const std::string_view k = tag.first;
    if (k == m.metric_tag || k == m.host_tag ||
        std::find(m.run_tags.begin(), m.run_tags.end(), k) != m.run_tags.end()) {
      continue;
    }
    rest.push_back(tag);
  }
  if (rest.empty()) return "";
  std::sort(rest.begin(), rest.end());
  std::string out = "{";
  for (const auto& [k, v] : rest) {
    if (out.size() > 1) out.push_back(',');
    out.append(k).append("=").append(v);
  }
  out.push_back('}');
  return out;
}

std::string MetricOf(const Point& p, std::string_view field, const std::string& metric_tag_value,
                     const std::string& suffix, const PointMapping& m) {
  std::string name;
  if (!metric_tag_value.empty()) {
    name = field == m.value_field ? metric_tag_value : metric_tag_value + "/" + std::string(field);
  } else {
    name = std::string(p.measurement) + "/" + std::string(field);
  }
  return name + suffix;
}

double NumberOf(const FieldValue& v) {
  switch (v.type) {
    case FieldValue::Type::kFloat:
      return v.f;
    case FieldValue::Type::kInteger:
      return static_cast<double>(v.i);
    case FieldValue::Type::kUnsigned:
      return static_cast<double>(v.u);
    case FieldValue::Type::kBoolean:
      return v.b ? 1 : 0;
    case FieldValue::Type::kString:
      break;
  }
  return NAN;
}

// The step field's value as a step; false when it is not a whole number >= 0.
bool StepOf(const FieldValue& v, int64_t* step) {
  switch (v.type) {
    case FieldValue::Type::kInteger:
      *step = v.i;
      return v.i >= 0;
    case FieldValue::Type::kUnsigned:
      *step = static_cast<int64_t>(v.u);
      return v.u <= static_cast<uint64_t>(INT64_MAX);
    case FieldValue::Type::kFloat:
      if (!(v.f >= 0 && v.f < 9.2e18 && std::floor(v.f) == v.f)) return false;
      *step = static_cast<int64_t>(v.f);
      return true;
    default:
      return false;
  }
}

// The request: one batch per run, rows in step order, each metric a sparse column over them.
void Emit(const std::string& project, std::map<std::string, RunRows>& runs,
          v1::WriteRequest* request) {
  for (auto& [run, rows] : runs) {
    v1::RunBatch* batch = request->add_runs();
    batch->set_project(project);
    batch->set_run(run);
    batch->set_sampled(rows.sampled);
    if (!rows.host.empty()) batch->mutable_metadata()->set_host(rows.host);
    std::map<int64_t, uint32_t> row_of_step;
    for (const auto& [step, time] : rows.time_of_step) {
      row_of_step[step] = static_cast<uint32_t>(batch->steps_size());
      batch->add_steps(step);
      batch->add_times(time);
    }
    for (auto& [name, values] : rows.metrics) {
      // By step; of the values of one step the last to arrive wins, as in InfluxDB.
      std::stable_sort(values.begin(), values.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      v1::MetricColumn* column = batch->add_metrics();
      column->set_name(name);
      for (size_t i = 0; i < values.size(); ++i) {
        if (i + 1 < values.size() && values[i + 1].first == values[i].first) continue;
        column->add_rows(row_of_step[values[i].first]);
        column->add_values(values[i].second);
      }
      // A value at every row: a dense column, which needs no row numbers.
      if (column->values_size() == batch->steps_size()) column->clear_rows();
    }
    for (v1::Text& text : rows.texts) *batch->add_texts() = std::move(text);
  }
}

}  // namespace

MappedPoints MapPoints(const ParsedBody& parsed, const std::string& project, double now,
                       const PointMapping& mapping) {
  MappedPoints out;
  std::map<std::string, RunRows> runs;  // by run name
  for (const Point& p : parsed.points) {
    const std::string run = RunOf(p, mapping);
    int64_t step = 0;
    bool has_step = false;
    bool bad_step = false;
    for (const auto& [key, value] : p.fields) {
      if (key != mapping.step_field) continue;
      has_step = true;
      bad_step = !StepOf(value, &step);
    }
    if (bad_step) {
      out.errors.push_back({p.line, "unable to map line " + std::to_string(p.line) + ": field '" +
                                        mapping.step_field + "' must be a whole number >= 0"});
      continue;
    }
    const double time = p.timestamp_ns ? static_cast<double>(*p.timestamp_ns) / 1e9 : now;
    if (!has_step) step = static_cast<int64_t>(std::floor(time * 1000));
    auto [it, first] = runs.try_emplace(run);
    RunRows& rows = it->second;
    if (first) {
      rows.sampled = !has_step;
    } else if (rows.sampled == has_step) {
      out.errors.push_back({p.line, "unable to map line " + std::to_string(p.line) + ": run '" +
                                        run + "' has points with and without field '" +
                                        mapping.step_field + "' in one request"});
      continue;
    }
    if (std::string host = Tag(p, mapping.host_tag); !host.empty()) rows.host = host;
    rows.time_of_step.try_emplace(step, time);
    const std::string metric_tag_value = Tag(p, mapping.metric_tag);
    const std::string suffix = OtherTags(p, mapping);
    std::string prefix(p.measurement);
    prefix.append("\x1f").append(metric_tag_value).append("\x1f").append(suffix);
    auto& by_field = rows.by_prefix[prefix];
    for (const auto& [key, value] : p.fields) {
      if (key == mapping.step_field) continue;
      ++out.points;
      if (value.type == FieldValue::Type::kString) {
        v1::Text& text = rows.texts.emplace_back();
        text.set_name(MetricOf(p, key, metric_tag_value, suffix, mapping));
        text.set_step(step);
        text.set_time(time);
        text.set_value(std::string(value.s));
        continue;
      }
      Values*& values = by_field[key];
      if (values == nullptr)
        values = &rows.metrics[MetricOf(p, key, metric_tag_value, suffix, mapping)];
      values->emplace_back(step, NumberOf(value));
    }
  }
  Emit(project, runs, &out.request);
  return out;
}

}  // namespace trainwatch::influx
