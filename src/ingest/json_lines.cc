#include "ingest/json_lines.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "common/json.h"
#include "ingest/json_scanner.h"
#include "storage/run_info.h"

namespace trainwatch::ingest {
namespace {

// The highest rank, world size or local rank a line may give (a uint32 on the wire; kept in the
// int32 range so that every consumer can hold it).
constexpr int64_t kMaxRank = (int64_t{1} << 31) - 1;

// One line, parsed and checked, not yet added to the request.
struct Line {
  std::string project = "default";
  std::string run;
  bool has_step = false;
  int64_t step = 0;
  bool has_time = false;
  double time = 0;
  std::vector<std::pair<std::string, double>> metrics;
  bool has_metadata = false;
  v1::RunMetadata metadata;
  // The rank of a distributed run that wrote the line (RunBatch.rank); "host" belongs to it when
  // "rank" is given, else to the run's metadata.
  bool has_rank = false;
  bool has_world_size = false;
  bool has_local_rank = false;
  bool has_host = false;
  uint32_t rank = 0;
  uint32_t world_size = 0;
  uint32_t local_rank = 0;
  std::string host;
};

// Parses one line into *line; returns false with *error set.
class LineParser {
 public:
  LineParser(std::string_view text, const IngestLimits& limits) : scanner_(text), limits_(limits) {}

  bool Parse(Line* line, std::string* error) {
    if (!ParseObject(line)) {
      *error = error_.empty() ? scanner_.error() : error_;
      return false;
    }
    if (!scanner_.AtEnd()) {
      *error = "unexpected text after the object at byte " + std::to_string(scanner_.offset());
      return false;
    }
    if (line->run.empty()) {
      *error = "missing field 'run'";
      return false;
    }
    if (!line->metrics.empty() && !line->has_step) {
      *error = "missing field 'step' (required with 'metrics')";
      return false;
    }
    return CheckRank(line, error);
  }

 private:
  bool Fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }

  bool ReadName(std::string_view field, std::string* out) {
    if (scanner_.PeekKind() != '"')
      return Fail("field '" + std::string(field) + "': expected a string");
    if (!scanner_.ReadString(out)) return false;
    Status s = ValidateName(field, *out, limits_);
    return s.ok() || Fail("field '" + std::string(field) + "': " + s.message());
  }

  bool ReadPlainString(std::string_view field, std::string* out) {
    if (scanner_.PeekKind() != '"')
      return Fail("field '" + std::string(field) + "': expected a string");
    if (!scanner_.ReadString(out)) return false;
    if (out->size() > limits_.max_metadata_bytes)
      return Fail("field '" + std::string(field) + "' is too long");
    return true;
  }

  bool ParseObject(Line* line) {
    if (!scanner_.ExpectChar('{')) return false;
    std::string key, text;
    bool done = false;
    for (bool first = true;; first = false) {
      if (!scanner_.NextKey(&key, &done, first)) return false;
      if (done) return true;
      if (key == "project") {
        if (!ReadName("project", &line->project)) return false;
      } else if (key == "run") {
        if (!ReadName("run", &line->run)) return false;
      } else if (key == "step") {
        if (!ParseStep(line)) return false;
      } else if (key == "time") {
        if (!ParseTime(line)) return false;
      } else if (key == "metrics") {
        if (!ParseMetrics(line)) return false;
      } else if (key == "name") {
        if (!ReadName("name", &text)) return false;
        line->metadata.set_name(text);
        line->has_metadata = true;
      } else if (key == "group") {
        if (!ReadPlainString("group", &text)) return false;
        line->metadata.set_group(text);
        line->has_metadata = true;
      } else if (key == "host") {
        if (!ReadPlainString("host", &line->host)) return false;
        line->has_host = true;
      } else if (key == "rank") {
        if (!ReadRankNumber("rank", &line->rank)) return false;
        line->has_rank = true;
      } else if (key == "world_size") {
        if (!ReadRankNumber("world_size", &line->world_size)) return false;
        line->has_world_size = true;
      } else if (key == "local_rank") {
        if (!ReadRankNumber("local_rank", &line->local_rank)) return false;
        line->has_local_rank = true;
      } else if (key == "status") {
        if (!ReadPlainString("status", &text)) return false;
        storage::RunStatus status;
        if (!storage::ParseRunStatus(text, &status)) {
          return Fail("field 'status': expected running, finished, crashed or stalled");
        }
        line->metadata.set_status(text);
        line->has_metadata = true;
      } else if (key == "tags") {
        if (!ParseTags(line)) return false;
      } else if (key == "config") {
        if (!ParseConfig(line)) return false;
      } else {
        return Fail("unknown field '" + key + "'");
      }
    }
  }

  // "rank", "world_size" and "local_rank": non-negative integers below 2^31 (world_size >= 1).
  bool ReadRankNumber(std::string_view field, uint32_t* out) {
    const std::string f(field);
    double v;
    bool is_int;
    int64_t i;
    if (scanner_.PeekKind() != 'n') return Fail("field '" + f + "': expected an integer");
    if (!scanner_.ReadNumber(&v, &is_int, &i))
      return Fail("field '" + f + "': " + scanner_.error());
    if (!is_int) return Fail("field '" + f + "': expected an integer (no fraction or exponent)");
    if (i < 0) return Fail("field '" + f + "': must not be negative, got " + std::to_string(i));
    if (i > kMaxRank) {
      return Fail("field '" + f + "': must be at most " + std::to_string(kMaxRank) + ", got " +
                  std::to_string(i));
    }
    if (field == "world_size" && i == 0) return Fail("field 'world_size': must be at least 1");
    *out = static_cast<uint32_t>(i);
    return true;
  }

  // The rank fields are consistent; "host" goes to the rank when there is one.
  bool CheckRank(Line* line, std::string* error) {
    if (!line->has_rank) {
      const char* orphan = line->has_world_size   ? "world_size"
                           : line->has_local_rank ? "local_rank"
                                                  : nullptr;
      if (orphan != nullptr) {
        *error = "field '" + std::string(orphan) + "' needs field 'rank'";
        return false;
      }
      if (line->has_host) {
        line->metadata.set_host(line->host);
        line->has_metadata = true;
      }
      return true;
    }
    if (line->has_world_size && line->rank >= line->world_size) {
      *error = "field 'rank': must be below world_size (" + std::to_string(line->world_size) +
               "), got " + std::to_string(line->rank);
      return false;
    }
    if (line->has_world_size && line->has_local_rank && line->local_rank >= line->world_size) {
      *error = "field 'local_rank': must be below world_size (" + std::to_string(line->world_size) +
               "), got " + std::to_string(line->local_rank);
      return false;
    }
    return true;
  }

  bool ParseStep(Line* line) {
    double v;
    bool is_int;
    int64_t i;
    if (scanner_.PeekKind() != 'n') return Fail("field 'step': expected an integer");
    if (!scanner_.ReadNumber(&v, &is_int, &i)) return Fail("field 'step': " + scanner_.error());
    if (!is_int) {
      return Fail(std::isfinite(v)
                      ? "field 'step': expected an integer within int64 (no fraction or exponent)"
                      : "field 'step': must be a finite integer");
    }
    if (i < 0) return Fail("field 'step': must not be negative, got " + std::to_string(i));
    line->step = i;
    line->has_step = true;
    return true;
  }

  bool ParseTime(Line* line) {
    double v;
    bool is_int;
    int64_t i;
    if (scanner_.PeekKind() != 'n') return Fail("field 'time': expected unix seconds as a number");
    if (!scanner_.ReadNumber(&v, &is_int, &i)) return Fail("field 'time': " + scanner_.error());
    if (!std::isfinite(v) || v < 0) return Fail("field 'time': must be finite and not negative");
    line->time = v;
    line->has_time = true;
    return true;
  }

  bool ParseMetrics(Line* line) {
    if (!scanner_.ExpectChar('{')) return Fail("field 'metrics': expected an object");
    std::string name;
    bool done = false;
    for (bool first = true;; first = false) {
      if (!scanner_.NextKey(&name, &done, first)) return false;
      if (done) return CheckDistinct(*line);
      Status s = ValidateName("metric", name, limits_);
      if (!s.ok()) return Fail("field 'metrics': " + s.message());
      if (scanner_.PeekKind() != 'n') {
        return Fail("metric '" + name + "': expected a number (or NaN, Infinity, -Infinity)");
      }
      double v;
      bool is_int;
      int64_t i;
      if (!scanner_.ReadNumber(&v, &is_int, &i))
        return Fail("metric '" + name + "': " + scanner_.error());
      if (line->metrics.size() >= limits_.max_metrics_per_run) {
        return Fail("more than " + std::to_string(limits_.max_metrics_per_run) +
                    " metrics in one line (the per-run limit)");
      }
      line->metrics.emplace_back(std::move(name), v);
    }
  }

  // A metric twice in one line is ambiguous (which value?): the line is refused.
  bool CheckDistinct(const Line& line) {
    if (line.metrics.size() < 2) return true;
    std::vector<std::string_view> names;
    names.reserve(line.metrics.size());
    for (const auto& [name, value] : line.metrics) names.push_back(name);
    std::sort(names.begin(), names.end());
    auto dup = std::adjacent_find(names.begin(), names.end());
    if (dup == names.end()) return true;
    return Fail("metric '" + std::string(*dup) + "' appears twice in the line");
  }

  bool ParseTags(Line* line) {
    if (!scanner_.ExpectChar('[')) return Fail("field 'tags': expected an array of strings");
    std::string tag;
    size_t total = 0;
    line->has_metadata = true;
    if (scanner_.PeekChar() == ']') return scanner_.ExpectChar(']');
    for (;;) {
      if (!ReadPlainString("tags", &tag)) return false;
      total += tag.size();
      if (total > limits_.max_metadata_bytes) return Fail("field 'tags' is too long");
      line->metadata.add_tags(tag);
      if (scanner_.PeekChar() == ']') return scanner_.ExpectChar(']');
      if (!scanner_.ExpectChar(',')) return Fail("field 'tags': expected ',' or ']'");
    }
  }

  bool ParseConfig(Line* line) {
    if (scanner_.PeekKind() != '{') return Fail("field 'config': expected an object");
    std::string_view raw;
    if (!scanner_.SkipValue(&raw)) return false;
    if (raw.size() > limits_.max_metadata_bytes) return Fail("field 'config' is too large");
    Result<nlohmann::json> parsed = ParseJson(raw);
    if (!parsed.ok()) {
      return Fail("field 'config': not plain JSON (NaN and Infinity are not allowed in config): " +
                  parsed.status().message());
    }
    line->metadata.set_config_json(parsed->dump());
    line->has_metadata = true;
    return true;
  }

  JsonScanner scanner_;
  const IngestLimits& limits_;
  std::string error_;
};

// Builds the request, one RunBatch per (project, run, rank) and one column per metric (lines that
// name no rank are a batch of their own, without RankInfo).
class RequestBuilder {
 public:
  explicit RequestBuilder(ParsedLines* out) : out_(out) {}

  void Add(Line& line, uint64_t line_no, double now) {
    const int64_t rank = line.has_rank ? static_cast<int64_t>(line.rank) : -1;
    auto [it, inserted] =
        batches_.try_emplace(BatchKey{line.project, line.run, rank}, BatchState{});
    BatchState& state = it->second;
    if (inserted) {
      state.index = out_->request.runs_size();
      v1::RunBatch* batch = out_->request.add_runs();
      batch->set_project(line.project);
      batch->set_run(line.run);
      if (line.has_rank) batch->mutable_rank()->set_rank(line.rank);
      out_->column_first_line.emplace_back();
    }
    v1::RunBatch* batch = out_->request.mutable_runs(state.index);
    if (line.has_rank) {
      // A later line of the same rank updates what it says about the rank.
      v1::RankInfo* info = batch->mutable_rank();
      if (line.has_world_size) info->set_world_size(line.world_size);
      if (line.has_local_rank) info->set_local_rank(line.local_rank);
      if (line.has_host) info->set_host(line.host);
    }
    if (line.has_metadata) MergeMetadata(batch->mutable_metadata(), line.metadata);
    if (!line.has_step) return;
    const uint32_t row = batch->steps_size();
    batch->add_steps(line.step);
    batch->add_times(line.has_time ? line.time : now);
    for (auto& [name, value] : line.metrics) {
      auto [col, added] = state.columns.try_emplace(name, batch->metrics_size());
      if (added) {
        v1::MetricColumn* column = batch->add_metrics();
        column->set_name(name);
        out_->column_first_line[state.index].push_back(line_no);
      }
      v1::MetricColumn* column = batch->mutable_metrics(col->second);
      column->add_rows(row);
      column->add_values(value);
      ++out_->points;
    }
  }

  // Drops the row lists of columns that have a value in every row of their batch.
  void Finish() {
    for (v1::RunBatch& batch : *out_->request.mutable_runs()) {
      for (v1::MetricColumn& column : *batch.mutable_metrics()) {
        if (column.values_size() == batch.steps_size()) column.clear_rows();
      }
    }
  }

 private:
  struct BatchState {
    int index = 0;
    std::unordered_map<std::string, int> columns;
  };

  static void MergeMetadata(v1::RunMetadata* into, const v1::RunMetadata& from) {
    if (from.has_config_json() && into->has_config_json()) {
      nlohmann::json merged = nlohmann::json::parse(into->config_json());
      storage::MergeConfig(&merged, nlohmann::json::parse(from.config_json()));
      v1::RunMetadata copy = from;
      copy.set_config_json(merged.dump());
      into->MergeFrom(copy);
      into->set_config_json(copy.config_json());
      return;
    }
    into->MergeFrom(from);
  }

  // (project, run, rank); rank -1: the line named none.
  using BatchKey = std::tuple<std::string, std::string, int64_t>;

  ParsedLines* out_;
  std::map<BatchKey, BatchState> batches_;
};

}  // namespace

ParsedLines ParseJsonLines(std::string_view body, double now, const IngestLimits& limits) {
  ParsedLines out;
  RequestBuilder builder(&out);
  uint64_t line_no = 0;
  while (!body.empty()) {
    size_t end = body.find('\n');
    std::string_view text = body.substr(0, end);
    body.remove_prefix(end == std::string_view::npos ? body.size() : end + 1);
    ++line_no;
    if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    Line line;
    std::string error;
    if (!LineParser(text, limits).Parse(&line, &error)) {
      out.errors.push_back({line_no, std::move(error)});
      continue;
    }
    builder.Add(line, line_no, now);
    ++out.lines_accepted;
  }
  builder.Finish();
  return out;
}

}  // namespace trainwatch::ingest
