// The live hub's WebSocket messages (src/api/live_hub.h): what a browser sends on /api/v1/live,
// through the handler the HTTP server registers, with a fake peer in place of the socket.
//
// An input is up to four messages (FuzzedDataProvider strings) sent in turn on two connections, one
// with an unrestricted key and one whose key sees only project "p"; then a committed write and
// alerts of projects p and q are published. Checks, besides memory safety and no exception escaping
// the handler: every message the hub sends is valid JSON with a "type"; each client message gets
// exactly one answer ("subscribed" or "error"); publishing sends only to a subscribed peer, never
// another project's alert to the bound key, and nothing after a peer closed.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/live_hub.h"
#include "auth/key_store.h"
#include "common/metrics_registry.h"
#include "fuzz/fuzz_support.h"

namespace {

using namespace trainwatch;

class FakePeer final : public api::WebSocketPeer {
 public:
  FakePeer(uint64_t id, auth::Principal who) : id_(id), who_(std::move(who)) {}
  void Send(std::string text) override { sent.push_back(std::move(text)); }
  void Close() override { closed = true; }
  uint64_t id() const override { return id_; }
  const auth::Principal& principal() const override { return who_; }

  std::vector<std::string> sent;
  bool closed = false;

 private:
  const uint64_t id_;
  const auth::Principal who_;
};

v1::WriteRequest CommittedWrite() {
  v1::WriteRequest request;
  for (const char* run : {"r1", "r2"}) {
    v1::RunBatch* batch = request.add_runs();
    batch->set_project("p");
    batch->set_run(run);
    batch->add_steps(3);
    batch->add_steps(4);
    batch->add_times(1767225600.0);
    batch->add_times(1767225601.0);
    v1::MetricColumn* loss = batch->add_metrics();
    loss->set_name("loss");
    loss->add_values(0.5);
    loss->add_values(0.25);
    v1::MetricColumn* acc = batch->add_metrics();
    acc->set_name("acc");
    acc->add_rows(1);
    acc->add_values(0.75);
  }
  return request;
}

std::string TypeOf(const std::string& message) {
  nlohmann::json j = nlohmann::json::parse(message, nullptr, false);
  FUZZ_CHECK(j.is_object() && j.contains("type") && j["type"].is_string(), "not a hub message: " + message);
  return j["type"].get<std::string>();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const v1::WriteRequest write = CommittedWrite();
  MetricsRegistry metrics;
  api::LiveHub hub(metrics);
  api::WebSocketHandler handler = hub.Handler();
  // Every message goes to two connections: one with an unrestricted key, one whose key sees only
  // project "p".
  auth::Principal bound;
  bound.key_name = "p-reader";
  bound.scope = auth::Scope::kRead;
  bound.projects = {"p"};
  std::shared_ptr<FakePeer> peers[] = {std::make_shared<FakePeer>(1, auth::Principal{}),
                                       std::make_shared<FakePeer>(2, bound)};
  for (const auto& peer : peers) handler.on_open(peer);

  FuzzedDataProvider in(data, size);
  bool subscribed[2] = {false, false};
  for (int i = 0; i < 4 && in.remaining_bytes() > 0; ++i) {
    std::string message = i == 3 ? in.ConsumeRemainingBytesAsString() : in.ConsumeRandomLengthString(4096);
    for (int p = 0; p < 2; ++p) {
      const size_t before = peers[p]->sent.size();
      handler.on_message(peers[p], message);
      FUZZ_CHECK(peers[p]->sent.size() == before + 1, "one answer per message");
      const std::string type = TypeOf(peers[p]->sent.back());
      FUZZ_CHECK(type == "subscribed" || type == "error", peers[p]->sent.back());
      subscribed[p] = subscribed[p] || type == "subscribed";
    }
  }

  size_t answers[2] = {peers[0]->sent.size(), peers[1]->sent.size()};
  hub.Publish(write);
  hub.PublishAlert("p", "r1", R"({"id":"a1"})");
  hub.PublishAlert("q", "r1", R"({"id":"a2"})");
  for (int p = 0; p < 2; ++p) {
    for (size_t i = answers[p]; i < peers[p]->sent.size(); ++i) {
      const std::string type = TypeOf(peers[p]->sent[i]);
      FUZZ_CHECK(type == "points" || type == "alert", peers[p]->sent[i]);
      FUZZ_CHECK(p == 0 || peers[p]->sent[i].find(R"("a2")") == std::string::npos,
                 "a key bound to project p saw an alert of project q");
    }
    FUZZ_CHECK(subscribed[p] || peers[p]->sent.size() == answers[p], "sent to a peer that never subscribed");
  }

  for (const auto& peer : peers) handler.on_close(peer);
  FUZZ_CHECK(hub.subscribers() == 0, "subscriber left after close");
  answers[0] = peers[0]->sent.size();
  answers[1] = peers[1]->sent.size();
  hub.Publish(write);
  FUZZ_CHECK(peers[0]->sent.size() == answers[0] && peers[1]->sent.size() == answers[1], "sent after close");
  return 0;
}
