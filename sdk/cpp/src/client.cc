// The public API (trainwatch/client.h) over ClientCore.
#include <unistd.h>

#include <random>

#include "client_core.h"
#include "system_metrics_thread.h"
#include "trainwatch/client.h"

namespace trainwatch {
namespace {

std::string NewRunId() {
  static constexpr char kAlphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::random_device device;
  std::string id(8, '0');
  for (char& c : id) c = kAlphabet[device() % 36];
  return id;
}

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

v1::RunBatch BatchFor(const sdk::RunState& run) {
  v1::RunBatch batch;
  run.Address(&batch);
  return batch;
}

std::shared_ptr<sdk::RunState> NewRunState(const RunOptions& options) {
  std::string project = options.project.empty() ? "default" : options.project;
  std::string id = options.id.empty() ? NewRunId() : options.id;
  if (options.rank.rank < 0)
    return std::make_shared<sdk::RunState>(std::move(project), std::move(id));
  v1::RankInfo rank;
  rank.set_rank(static_cast<uint32_t>(options.rank.rank));
  rank.set_world_size(options.rank.world_size);
  rank.set_local_rank(options.rank.local_rank);
  rank.set_host(options.rank.host.empty() ? HostName() : options.rank.host);
  return std::make_shared<sdk::RunState>(std::move(project), std::move(id), std::move(rank));
}

}  // namespace

Client::Client(ClientOptions options) : core_(sdk::ClientCore::Create(std::move(options))) {}

Client::~Client() { core_->Close(); }

std::unique_ptr<Run> Client::StartRun(const RunOptions& options) {
  std::shared_ptr<sdk::RunState> state = NewRunState(options);
  core_->RegisterRun(state);
  v1::RunBatch batch = BatchFor(*state);
  v1::RunMetadata* meta = batch.mutable_metadata();
  meta->set_status("running");
  if (state->sends_run_metadata()) {
    if (!options.name.empty()) meta->set_name(options.name);
    if (!options.group.empty()) meta->set_group(options.group);
    for (const std::string& tag : options.tags) meta->add_tags(core_->masker().MaskTag(tag));
    if (!options.config_json.empty()) {
      meta->set_config_json(core_->masker().MaskJsonText(options.config_json));
    }
    if (!options.resume) meta->set_start_time(sdk::UnixNow());
    meta->set_host(HostName());
  }
  // The first heartbeat goes with the start: the server knows the run's (the rank's) heartbeat
  // interval from its first batch, so a rank that dies before the batcher's next heartbeat is
  // still judged by it (rank_dead) rather than by a floor.
  if (core_->options().heartbeat_interval_seconds > 0) {
    batch.mutable_heartbeat()->set_interval_seconds(core_->options().heartbeat_interval_seconds);
  }
  core_->AddRunBatch(std::move(batch), false);
  std::unique_ptr<Run> run(new Run(core_, state));
  if (options.system_metrics_interval_seconds > 0) {
    std::weak_ptr<sdk::RunState> weak = state;
    sdk::ClientCore* core = core_.get();  // the Run (and so the thread) holds the core alive
    sdk::SystemSamplerOptions sampler;
    sampler.nvml_library = options.nvml_library;
    sampler.machine = options.machine_metrics;
    sampler.gpus = options.gpu_metrics;
    sampler.gpu_index = options.gpu_index;
    run->system_metrics_ = std::make_unique<sdk::SystemMetricsThread>(
        options.system_metrics_interval_seconds, std::move(sampler),
        [core, weak](int64_t sample, const std::vector<std::pair<std::string, double>>& values,
                     double time) {
          auto state = weak.lock();
          if (!state || state->finished.load()) return;
          sdk::Record record{state.get(), sample, time, 0, true, {}, {}};
          for (const auto& [name, value] : values) {
            record.ids[record.count] = state->names.Intern(name);
            record.values[record.count] = value;
            if (++record.count == sdk::kRecordMetrics) {
              core->Enqueue(record);
              record.count = 0;
            }
          }
          if (record.count > 0) core->Enqueue(record);
        });
  }
  return run;
}

bool Client::Flush(double timeout_seconds) { return core_->Flush(timeout_seconds); }
void Client::Close() { core_->Close(); }
ClientStats Client::Stats() const { return core_->Stats(); }
const std::string& Client::writer_id() const { return core_->writer_id(); }
std::string Client::spool_path() const { return core_->spool_path(); }

Run::Run(std::shared_ptr<sdk::ClientCore> core, std::shared_ptr<sdk::RunState> state)
    : core_(std::move(core)), state_(std::move(state)) {}

Run::~Run() {
  system_metrics_.reset();
  state_->handle_alive.store(false);
}

const std::string& Run::project() const { return state_->project; }
const std::string& Run::id() const { return state_->id; }

void Run::Enqueue(int64_t step, std::span<const Metric> metrics, double unix_time, bool sampled) {
  if (state_->finished.load(std::memory_order_relaxed)) return;
  sdk::Record record;
  record.run = state_.get();
  record.step = step;
  record.time = unix_time;
  record.sampled = sampled;
  record.count = 0;
  for (const Metric& m : metrics) {
    record.ids[record.count] = state_->names.Intern(m.name);
    record.values[record.count] = m.value;
    if (++record.count == sdk::kRecordMetrics) {
      core_->Enqueue(record);
      record.count = 0;
    }
  }
  if (record.count > 0) core_->Enqueue(record);
}

void Run::Log(int64_t step, std::initializer_list<Metric> metrics) {
  Enqueue(step, std::span<const Metric>(metrics.begin(), metrics.size()), sdk::UnixNow(), false);
}

void Run::Log(int64_t step, std::span<const Metric> metrics) {
  Enqueue(step, metrics, sdk::UnixNow(), false);
}

void Run::Log(int64_t step, std::span<const Metric> metrics, double unix_time) {
  Enqueue(step, metrics, unix_time, false);
}

void Run::LogSampled(int64_t sample, std::span<const Metric> metrics, double unix_time) {
  Enqueue(sample, metrics, unix_time, true);
}

void Run::LogHistogram(int64_t step, std::string_view name, HistogramBuckets histogram) {
  LogHistogram(step, name, std::move(histogram), sdk::UnixNow());
}

void Run::LogHistogram(int64_t step, std::string_view name, HistogramBuckets histogram,
                       double unix_time) {
  if (state_->finished.load()) return;
  v1::RunBatch batch = BatchFor(*state_);
  v1::Histogram* h = batch.add_histograms();
  h->set_name(std::string(name));
  h->set_step(step);
  h->set_time(unix_time);
  h->mutable_edges()->Add(histogram.edges.begin(), histogram.edges.end());
  h->mutable_counts()->Add(histogram.counts.begin(), histogram.counts.end());
  core_->AddRunBatch(std::move(batch), false);
}

void Run::LogImage(int64_t step, std::string_view name, std::string encoded,
                   std::string_view caption, uint32_t index) {
  LogImage(step, name, std::move(encoded), caption, index, sdk::UnixNow());
}

void Run::LogImage(int64_t step, std::string_view name, std::string encoded,
                   std::string_view caption, uint32_t index, double unix_time) {
  if (state_->finished.load()) return;
  v1::RunBatch batch = BatchFor(*state_);
  v1::Image* image = batch.add_images();
  image->set_name(std::string(name));
  image->set_step(step);
  image->set_time(unix_time);
  image->set_index(index);
  image->set_data(std::move(encoded));
  image->set_caption(std::string(caption));
  core_->AddRunBatch(std::move(batch), false);
}

void Run::LogText(int64_t step, std::string_view name, std::string_view text) {
  LogText(step, name, text, sdk::UnixNow());
}

void Run::LogText(int64_t step, std::string_view name, std::string_view text, double unix_time) {
  if (state_->finished.load()) return;
  v1::RunBatch batch = BatchFor(*state_);
  v1::Text* t = batch.add_texts();
  t->set_name(std::string(name));
  t->set_step(step);
  t->set_time(unix_time);
  t->set_value(std::string(text));
  core_->AddRunBatch(std::move(batch), false);
}

void Run::SetConfig(std::string_view config_json) {
  if (!state_->sends_run_metadata()) return;
  v1::RunBatch batch = BatchFor(*state_);
  batch.mutable_metadata()->set_config_json(core_->masker().MaskJsonText(std::string(config_json)));
  core_->AddRunBatch(std::move(batch), false);
}

void Run::SetTags(std::vector<std::string> tags, bool replace) {
  if (!state_->sends_run_metadata()) return;
  v1::RunBatch batch = BatchFor(*state_);
  for (std::string& tag : tags) batch.mutable_metadata()->add_tags(core_->masker().MaskTag(tag));
  batch.mutable_metadata()->set_replace_tags(replace);
  core_->AddRunBatch(std::move(batch), false);
}

void Run::SetGraph(std::string graph_json) {
  if (!state_->sends_run_metadata()) return;
  v1::RunBatch batch = BatchFor(*state_);
  batch.mutable_metadata()->set_graph_json(std::move(graph_json));
  core_->AddRunBatch(std::move(batch), false);
}

void Run::Finish(std::string_view status) {
  if (state_->finished.exchange(true)) return;
  system_metrics_.reset();
  v1::RunBatch batch = BatchFor(*state_);
  batch.mutable_metadata()->set_status(std::string(status));
  batch.mutable_metadata()->set_end_time(sdk::UnixNow());
  core_->AddRunBatch(std::move(batch), true);
}

}  // namespace trainwatch
