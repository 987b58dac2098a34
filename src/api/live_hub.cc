#include "api/live_hub.h"

#include <vector>

#include <nlohmann/json.hpp>

#include "api/json_writer.h"
#include "common/json.h"

namespace trainwatch::api {

LiveHub::LiveHub(MetricsRegistry& metrics)
    : messages_(metrics.AddCounter("trainwatch_live_messages_total",
                                   "Messages pushed to live subscribers.")) {
  metrics.AddGauge("trainwatch_live_subscribers", "Open live WebSocket connections.",
                   [this] { return static_cast<double>(subscribers()); });
}

size_t LiveHub::subscribers() const {
  MutexLock lock(mu_);
  return subs_.size();
}

size_t LiveHub::CloseKey(const std::string& key_id) {
  std::vector<std::shared_ptr<WebSocketPeer>> closing;
  {
    MutexLock lock(mu_);
    for (const auto& [id, sub] : subs_) {
      if (sub.peer && sub.peer->principal().key_id == key_id) closing.push_back(sub.peer);
    }
  }
  for (const auto& peer : closing) peer->Close();  // on_close erases it (outside mu_ here)
  return closing.size();
}

WebSocketHandler LiveHub::Handler() {
  WebSocketHandler handler;
  handler.on_open = [this](std::shared_ptr<WebSocketPeer> peer) {
    MutexLock lock(mu_);
    subs_[peer->id()].peer = std::move(peer);
  };
  handler.on_message = [this](const std::shared_ptr<WebSocketPeer>& peer, std::string_view text) {
    OnMessage(peer, text);
  };
  handler.on_close = [this](const std::shared_ptr<WebSocketPeer>& peer) {
    MutexLock lock(mu_);
    subs_.erase(peer->id());
  };
  return handler;
}

void LiveHub::OnMessage(const std::shared_ptr<WebSocketPeer>& peer, std::string_view text) {
  Result<nlohmann::json> parsed = ParseJson(text);
  auto reply_error = [&](const std::string& why) {
    // `why` may quote the client's bytes, which need not be UTF-8: replace them, never throw.
    nlohmann::json reply{{"type", "error"}, {"error", why}};
    peer->Send(reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  };
  if (!parsed.ok()) {
    reply_error(parsed.status().message());
    return;
  }
  nlohmann::json msg = std::move(*parsed);
  if (!msg.is_object() || !msg.contains("subscribe") || !msg["subscribe"].is_object()) {
    reply_error(
        "expected {\"subscribe\": {\"project\": ..., \"runs\": [...], \"metrics\": [...]}}");
    return;
  }
  const nlohmann::json& sub = msg["subscribe"];
  Subscription next;
  next.peer = peer;
  next.subscribed = true;
  try {
    if (sub.contains("project")) {
      next.all_projects = false;
      next.project = sub["project"].get<std::string>();
    }
    if (sub.contains("runs")) next.runs = sub["runs"].get<std::set<std::string>>();
    if (sub.contains("metrics")) next.metrics = sub["metrics"].get<std::set<std::string>>();
  } catch (const nlohmann::json::exception&) {
    reply_error("subscribe: project must be a string, runs and metrics arrays of strings");
    return;
  }
  const auth::Principal& who = peer->principal();
  if (!who.projects.empty() && (next.all_projects || !who.SeesProject(next.project))) {
    reply_error("key '" + who.key_name + "' does not see " +
                (next.all_projects ? std::string("every project: subscribe to one")
                                   : "project '" + next.project + "'"));
    return;
  }
  {
    MutexLock lock(mu_);
    subs_[peer->id()] = std::move(next);
  }
  peer->Send(R"({"type":"subscribed"})");
}

void LiveHub::PublishAlert(const std::string& project, const std::string& run,
                           const std::string& alert_json) {
  std::string out = R"({"type":"alert","alert":)" + alert_json + "}";
  MutexLock lock(mu_);
  for (auto& [id, sub] : subs_) {
    if (!sub.subscribed || (!sub.all_projects && sub.project != project)) continue;
    if (!sub.runs.empty() && !sub.runs.count(run)) continue;
    sub.peer->Send(out);
    messages_.Add();
  }
}

void LiveHub::Publish(const v1::WriteRequest& request) {
  MutexLock lock(mu_);
  if (subs_.empty()) return;
  for (auto& [id, sub] : subs_) {
    if (!sub.subscribed) continue;
    for (const v1::RunBatch& batch : request.runs()) {
      if (!sub.all_projects && batch.project() != sub.project) continue;
      if (!sub.runs.empty() && !sub.runs.count(batch.run())) continue;
      std::string out = R"({"type":"points","project":)";
      AppendString(&out, batch.project());
      out += R"(,"run":)";
      AppendString(&out, batch.run());
      // A distributed run's rank (docs/distributed.md); absent: run-level.
      if (batch.has_rank()) out += R"(,"rank":)" + std::to_string(batch.rank().rank());
      out += R"(,"metrics":{)";
      bool any = false;
      for (const v1::MetricColumn& column : batch.metrics()) {
        if (!sub.metrics.empty() && !sub.metrics.count(column.name())) continue;
        if (any) out.push_back(',');
        any = true;
        AppendString(&out, column.name());
        out += ":[";
        for (int i = 0; i < column.values_size(); ++i) {
          int row = column.rows_size() ? static_cast<int>(column.rows(i)) : i;
          if (i) out.push_back(',');
          out.push_back('[');
          AppendInt(&out, batch.steps(row));
          out.push_back(',');
          AppendNumber(&out, batch.times(row), NonFinite::kStrings);
          out.push_back(',');
          AppendNumber(&out, column.values(i), NonFinite::kStrings);
          out.push_back(']');
        }
        out.push_back(']');
      }
      out += "}}";
      if (!any) continue;
      sub.peer->Send(std::move(out));
      messages_.Add();
    }
  }
}

}  // namespace trainwatch::api
