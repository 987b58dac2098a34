// LiveHub: fans committed points out to WebSocket subscribers.
//
// Protocol (docs/api.md): the client sends
//   {"subscribe": {"project": "p", "runs": ["r1"], "metrics": ["loss"]}}
// (empty or missing lists mean everything in the project; a missing project means every project)
// and receives, for every committed write that matches,
//   {"type": "points", "project": "p", "run": "r1", "metrics": {"loss": [[step, time, value],
//   ...]}}
// and, for every alert created or changed in a subscribed project (and run, if runs are listed),
//   {"type": "alert", "alert": {...}}   (the alert as GET /api/v1/alerts shows it)
// Thread-safe.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <unordered_map>

#include "api/http_server.h"
#include "common/mutex.h"
#include "trainwatch/v1/ingest.pb.h"

namespace trainwatch::api {

class LiveHub {
 public:
  explicit LiveHub(MetricsRegistry& metrics);
  LiveHub(const LiveHub&) = delete;
  LiveHub& operator=(const LiveHub&) = delete;

  // The handler to register at the WebSocket path.
  WebSocketHandler Handler();
  // Called by the engine after each committed write; never blocks on a subscriber.
  void Publish(const v1::WriteRequest& request);
  // Pushes {"type":"alert","alert":<alert_json>} to the subscribers of `project` and `run`.
  void PublishAlert(const std::string& project, const std::string& run,
                    const std::string& alert_json);
  size_t subscribers() const;
  // Closes every connection opened with the key whose public id is `key_id` (a revoked key: its
  // open live connections end with it). Returns how many were closed.
  size_t CloseKey(const std::string& key_id);

 private:
  struct Subscription {
    std::shared_ptr<WebSocketPeer> peer;
    bool subscribed = false;
    bool all_projects = true;
    std::string project;
    std::set<std::string> runs, metrics;
  };
  void OnMessage(const std::shared_ptr<WebSocketPeer>& peer, std::string_view text);

  mutable Mutex mu_;
  std::unordered_map<uint64_t, Subscription> subs_ TW_GUARDED_BY(mu_);
  Counter& messages_;
};

}  // namespace trainwatch::api
