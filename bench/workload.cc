#include "workload.h"

#include <charconv>
#include <random>
#include <unordered_map>

#include <simdjson.h>

namespace trainwatch::bench {
namespace {

constexpr double kSyntheticStartTime = 1767225600;  // 2026-01-01T00:00:00Z, as gen_workload.py

void AppendDouble(std::string* out, double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  out->append(buf, end);
}

void AppendJsonString(std::string* out, const std::string& s) {
  out->push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') out->push_back('\\');
    out->push_back(c);
  }
  out->push_back('"');
}

std::vector<size_t> LaneRuns(const Workload& workload, int lane, int lanes) {
  std::vector<size_t> out;
  for (size_t r = static_cast<size_t>(lane); r < workload.runs.size(); r += static_cast<size_t>(lanes)) {
    out.push_back(r);
  }
  return out;
}

}  // namespace

uint64_t Workload::points() const {
  uint64_t n = 0;
  for (const RunData& run : runs) n += run.steps.size() * run.columns.size();
  return n;
}

bool LoadWorkloadJsonl(const std::string& path, Workload* workload, std::string* error) {
  simdjson::padded_string text;
  if (auto err = simdjson::padded_string::load(path).get(text); err) {
    *error = "reading " + path + ": " + simdjson::error_message(err);
    return false;
  }
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document_stream docs;
  if (auto err = parser.iterate_many(text, 1 << 20).get(docs); err) {
    *error = path + ": " + simdjson::error_message(err);
    return false;
  }
  std::unordered_map<std::string, size_t> run_index;
  std::unordered_map<std::string, size_t> metric_index;
  uint64_t line = 0;
  for (auto doc : docs) {
    ++line;
    auto fail = [&](const std::string& why) {
      *error = path + " line " + std::to_string(line) + ": " + why;
      return false;
    };
    simdjson::ondemand::object obj;
    if (doc.get_object().get(obj)) return fail("not a JSON object");
    RunData* run = nullptr;
    int64_t step = 0;
    double time = 0;
    size_t seen = 0;
    for (auto field : obj) {
      std::string_view key;
      if (field.unescaped_key().get(key)) return fail("bad key");
      if (key == "run") {
        std::string_view name;
        if (field.value().get_string().get(name)) return fail("run is not a string");
        auto [it, inserted] = run_index.emplace(std::string(name), workload->runs.size());
        if (inserted) {
          workload->runs.emplace_back();
          workload->runs.back().name = std::string(name);
        }
        run = &workload->runs[it->second];
      } else if (key == "step") {
        if (field.value().get_int64().get(step)) return fail("step is not an integer");
      } else if (key == "time") {
        if (field.value().get_double().get(time)) return fail("time is not a number");
      } else if (key == "metrics") {
        if (run == nullptr) return fail("\"metrics\" before \"run\"");
        const bool first_line = workload->metrics.empty() && workload->runs.size() == 1 && run->steps.empty();
        if (run->columns.empty()) run->columns.resize(workload->metrics.size());
        simdjson::ondemand::object metrics;
        if (field.value().get_object().get(metrics)) return fail("metrics is not an object");
        for (auto m : metrics) {
          std::string_view name;
          double value;
          if (m.unescaped_key().get(name) || m.value().get_double().get(value)) return fail("bad metric");
          size_t index;
          if (first_line) {
            index = workload->metrics.size();
            metric_index.emplace(std::string(name), index);
            workload->metrics.emplace_back(name);
            run->columns.emplace_back();
          } else if (seen < workload->metrics.size() && workload->metrics[seen] == name) {
            index = seen;  // the usual case: the same order as the first line
          } else {
            auto it = metric_index.find(std::string(name));
            if (it == metric_index.end()) return fail("metric '" + std::string(name) + "' not on line 1");
            index = it->second;
          }
          run->columns[index].push_back(value);
          ++seen;
        }
      }
    }
    if (run == nullptr) return fail("no run");
    if (seen != workload->metrics.size()) return fail("not every metric of line 1 is present");
    run->steps.push_back(step);
    run->times.push_back(time);
  }
  if (workload->runs.empty()) {
    *error = path + ": no lines";
    return false;
  }
  return true;
}

Workload SyntheticWorkload(int runs, int metrics, int64_t steps, const std::string& run_prefix) {
  Workload w;
  for (int m = 0; m < metrics; ++m) {
    std::string name = "m";  // not "m" + ...: GCC 12 warns falsely (-Wrestrict)
    name += std::to_string(m);
    w.metrics.push_back(std::move(name));
  }
  std::mt19937_64 rng(20261129);
  std::normal_distribution<double> noise(0, 0.01);
  for (int r = 0; r < runs; ++r) {
    RunData run;
    char name[16];
    std::snprintf(name, sizeof name, "%04d", r);
    run.name = run_prefix + name;
    run.steps.resize(static_cast<size_t>(steps));
    run.times.resize(static_cast<size_t>(steps));
    for (int64_t s = 0; s < steps; ++s) {
      run.steps[static_cast<size_t>(s)] = s;
      run.times[static_cast<size_t>(s)] = kSyntheticStartTime + 0.25 * static_cast<double>(s);
    }
    run.columns.resize(static_cast<size_t>(metrics));
    for (auto& column : run.columns) {
      column.resize(static_cast<size_t>(steps));
      double v = 1.0;
      for (double& x : column) {
        v += noise(rng);
        x = static_cast<float>(v);
      }
    }
    w.runs.push_back(std::move(run));
  }
  return w;
}

std::vector<ProtoBatch> BuildProtoBatches(const Workload& workload, int lane, int lanes,
                                          int rows_per_batch) {
  std::vector<ProtoBatch> out;
  std::vector<size_t> runs = LaneRuns(workload, lane, lanes);
  size_t max_rows = 0;
  for (size_t r : runs) max_rows = std::max(max_rows, workload.runs[r].steps.size());
  for (size_t begin = 0; begin < max_rows; begin += static_cast<size_t>(rows_per_batch)) {
    for (size_t r : runs) {
      const RunData& run = workload.runs[r];
      if (begin >= run.steps.size()) continue;
      size_t end = std::min(run.steps.size(), begin + static_cast<size_t>(rows_per_batch));
      ProtoBatch batch;
      v1::RunBatch* rb = batch.request.add_runs();
      rb->set_project(workload.project);
      rb->set_run(run.name);
      rb->mutable_steps()->Add(run.steps.begin() + begin, run.steps.begin() + end);
      rb->mutable_times()->Add(run.times.begin() + begin, run.times.begin() + end);
      for (size_t m = 0; m < workload.metrics.size(); ++m) {
        v1::MetricColumn* column = rb->add_metrics();
        column->set_name(workload.metrics[m]);
        column->mutable_values()->Add(run.columns[m].begin() + begin, run.columns[m].begin() + end);
      }
      batch.points = (end - begin) * workload.metrics.size();
      out.push_back(std::move(batch));
    }
  }
  return out;
}

std::vector<TextBody> BuildJsonBodies(const Workload& workload, int lane, int lanes,
                                      size_t body_bytes) {
  std::vector<TextBody> out;
  std::vector<size_t> runs = LaneRuns(workload, lane, lanes);
  // Each metric's `"name":` once, and each run's line prefix, formatted ahead.
  std::vector<std::string> keys;
  for (const std::string& m : workload.metrics) {
    keys.emplace_back();
    AppendJsonString(&keys.back(), m);
    keys.back().push_back(':');
  }
  size_t max_rows = 0;
  for (size_t r : runs) max_rows = std::max(max_rows, workload.runs[r].steps.size());
  TextBody current;
  for (size_t row = 0; row < max_rows; ++row) {
    for (size_t r : runs) {
      const RunData& run = workload.runs[r];
      if (row >= run.steps.size()) continue;
      std::string& b = current.body;
      b += "{\"project\":";
      AppendJsonString(&b, workload.project);
      b += ",\"run\":";
      AppendJsonString(&b, run.name);
      b += ",\"step\":" + std::to_string(run.steps[row]) + ",\"time\":";
      AppendDouble(&b, run.times[row]);
      b += ",\"metrics\":{";
      for (size_t m = 0; m < keys.size(); ++m) {
        if (m) b.push_back(',');
        b += keys[m];
        AppendDouble(&b, run.columns[m][row]);
      }
      b += "}}\n";
      current.points += keys.size();
      if (b.size() >= body_bytes) {
        out.push_back(std::move(current));
        current = TextBody{};
      }
    }
  }
  if (!current.body.empty()) out.push_back(std::move(current));
  return out;
}

}  // namespace trainwatch::bench
