// NotificationOutbox against real webhook receivers on loopback (the test HTTP listener), on a
// ManualClock: backoff waits pass only when a test advances the clock, and a test learns that the
// delivery threads caught up through ManualClock::AwaitWaiters (Settle), never by sleeping. The
// webhook sends themselves are real network round trips; every wait on them is bound by an event
// (a delivery done, a thread back waiting), not a duration.
#include "notify/outbox.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/testing/fault_injection_fs.h"
#include "common/testing/temp_dir.h"
#include "notify/testing/http_listener.h"
#include "notify/testing/sample_notification.h"
#include "notify/webhook_notifier.h"

namespace trainwatch::notify {
namespace {

using ::testing::HasSubstr;

// A receiver that is up but frozen: Send blocks until Release().
class FrozenNotifier final : public Notifier {
 public:
  struct Gate {
    Mutex mu;
    std::condition_variable cv;
    bool open TW_GUARDED_BY(mu) = false;
    void Release() {
      {
        MutexLock lock(mu);
        open = true;
      }
      cv.notify_all();
    }
  };
  // `gate` must outlive the notifier.
  explicit FrozenNotifier(Gate& gate) : gate_(gate) {}
  Status Send(const Notification&) override {
    MutexLock lock(gate_.mu);
    gate_.cv.wait(lock.native(), [&]() TW_REQUIRES(gate_.mu) { return gate_.open; });
    return Status::Unavailable("frozen receiver: timed out");
  }

 private:
  Gate& gate_;
};

std::string DownUrl() { return "http://127.0.0.1:" + std::to_string(test::UnusedPort()) + "/"; }

Route AllTo(const std::string& receiver) {
  Route r;
  r.receiver = receiver;
  return r;
}

class OutboxTest : public ::testing::Test {
 protected:
  OutboxOptions Options() {
    OutboxOptions o;
    o.initial_backoff_seconds = 0.01;
    o.max_backoff_seconds = 0.05;
    o.jitter_seed = 7;
    return o;
  }

  std::unique_ptr<Notifier> Webhook(const std::string& url, double timeout = 2) {
    return std::make_unique<WebhookNotifier>(WebhookOptions{url, "", timeout, {}}, clock_);
  }

  // Every receiver gets everything.
  RoutingTable Table(std::vector<std::pair<std::string, std::unique_ptr<Notifier>>> receivers) {
    RoutingTable t;
    for (auto& [name, notifier] : receivers) {
      t.routes.push_back(AllTo(name));
      t.receivers[name] = std::move(notifier);
    }
    return t;
  }
  RoutingTable One(const std::string& name, std::unique_ptr<Notifier> notifier) {
    std::vector<std::pair<std::string, std::unique_ptr<Notifier>>> v;
    v.emplace_back(name, std::move(notifier));
    return Table(std::move(v));
  }

  std::unique_ptr<NotificationOutbox> Open(RoutingTable table, OutboxOptions options,
                                           FileSystem& fs = PosixFileSystem()) {
    auto o = NotificationOutbox::Open(dir_.path(), std::move(table), fs, clock_, options, logger_,
                                      metrics_);
    EXPECT_TRUE(o.ok()) << o.status().ToString();
    return o.ok() ? std::move(o).value() : nullptr;
  }
  std::unique_ptr<NotificationOutbox> Open(RoutingTable table) {
    return Open(std::move(table), Options());
  }

  // Lets `receivers` delivery threads act on the current time and on what is queued, and returns
  // once each is idle again: waiting for its backoff, or for work.
  void Settle(size_t receivers = 1) {
    clock_.Advance(0);
    clock_.AwaitWaiters(receivers);
  }

  // The value of an unlabelled counter or gauge in the exposition text.
  double Metric(const std::string& name) {
    std::string text = metrics_.Render();
    size_t pos = text.find("\n" + name + " ");
    if (pos == std::string::npos) return -1;
    return std::stod(text.substr(pos + name.size() + 2));
  }

  std::vector<std::string> Bodies(const test::HttpListener& l) {
    std::vector<std::string> out;
    for (const auto& r : l.Requests()) out.push_back(r.body);
    return out;
  }

  std::vector<std::string> SegmentFiles() {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
      if (e.path().extension() == ".outbox") out.push_back(e.path().string());
    }
    return out;
  }

  ::trainwatch::test::TempDir dir_;
  ManualClock clock_;
  Logger logger_{LogLevel::kError};
  MetricsRegistry metrics_;
};

TEST_F(OutboxTest, DeliversToEveryReceiver) {
  test::HttpListener a, b;
  std::vector<std::pair<std::string, std::unique_ptr<Notifier>>> receivers;
  receivers.emplace_back("a", Webhook(a.Url()));
  receivers.emplace_back("b", Webhook(b.Url()));
  auto outbox = Open(Table(std::move(receivers)));
  Notification n = test::SampleNotification();
  ASSERT_TRUE(outbox->Enqueue(n).ok());
  outbox->WaitIdle();
  EXPECT_EQ(Bodies(a), std::vector<std::string>{NotificationToJson(n)});
  EXPECT_EQ(Bodies(b), std::vector<std::string>{NotificationToJson(n)});
  EXPECT_EQ(Metric("trainwatch_notifications_sent_total"), 2);
  EXPECT_EQ(Metric("trainwatch_notifications_queued"), 0);
}

TEST_F(OutboxTest, RetriesAfter500sWithBackoff) {
  test::HttpListener hook;
  hook.FailNext(3, 500);
  OutboxOptions options = Options();
  options.initial_backoff_seconds = 0.05;
  options.max_backoff_seconds = 1;
  auto outbox = Open(One("ops", Webhook(hook.Url())), options);
  Notification n = test::SampleNotification();
  ASSERT_TRUE(outbox->Enqueue(n).ok());
  Settle();
  EXPECT_EQ(hook.Requests().size(), 1u);
  // Waits of 0.05, 0.1 and 0.2 s, each shortened by at most 20% jitter (0.2 by default): no
  // retry before the shortest possible wait, one once the longest passed.
  for (double wait : {0.05, 0.1, 0.2}) {
    const size_t before = hook.Requests().size();
    clock_.Advance(0.8 * wait - 0.001);
    Settle();
    EXPECT_EQ(hook.Requests().size(), before) << "retried before a wait of " << wait;
    clock_.Advance(0.2 * wait + 0.001);
    Settle();
    EXPECT_EQ(hook.Requests().size(), before + 1) << "no retry after a wait of " << wait;
  }
  outbox->WaitIdle();
  EXPECT_EQ(Bodies(hook), std::vector<std::string>(4, NotificationToJson(n)));
  EXPECT_EQ(Metric("trainwatch_notifications_failed_total"), 3);
  EXPECT_EQ(Metric("trainwatch_notifications_sent_total"), 1);
}

TEST_F(OutboxTest, PermanentFailureIsDroppedNotRetried) {
  test::HttpListener hook;
  hook.SetDefaultStatus(400);
  auto outbox = Open(One("ops", Webhook(hook.Url())));
  ASSERT_TRUE(outbox->Enqueue(test::SampleNotification("1")).ok());
  ASSERT_TRUE(outbox->Enqueue(test::SampleNotification("2")).ok());
  outbox->WaitIdle();
  clock_.Advance(3600);  // no retry comes, however long we wait
  Settle();
  EXPECT_EQ(hook.Requests().size(), 2u);
  EXPECT_EQ(Metric("trainwatch_notifications_dropped_total"), 2);
  EXPECT_EQ(outbox->Queued(), 0u);
}

TEST_F(OutboxTest, ReceiverThatIsDownDoesNotDelayOthers) {
  test::HttpListener up;
  FrozenNotifier::Gate gate;
  std::vector<std::pair<std::string, std::unique_ptr<Notifier>>> receivers;
  receivers.emplace_back("frozen", std::make_unique<FrozenNotifier>(gate));
  receivers.emplace_back("refusing", Webhook(DownUrl()));
  receivers.emplace_back("up", Webhook(up.Url()));
  auto outbox = Open(Table(std::move(receivers)));
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(outbox->Enqueue(test::SampleNotification(std::to_string(i))).ok());
  Settle(/*receivers=*/2);  // "up" and "refusing"; "frozen" hangs in its first send
  EXPECT_EQ(up.Requests().size(), 3u);
  EXPECT_EQ(outbox->Queued(), 6u);  // 3 each for the frozen and the refusing receiver
  gate.Release();
  outbox->Stop();
}

TEST_F(OutboxTest, RestartDeliversExactlyWhatWasEnqueued) {
  std::vector<Notification> sent = {test::SampleNotification("1"), test::SampleNotification("2"),
                                    test::SampleNotification("1", "resolved")};
  sent[1].labels["note"] = "ünïcode \"quoted\"";
  {
    auto outbox = Open(One("ops", Webhook(DownUrl())));
    for (const Notification& n : sent) ASSERT_TRUE(outbox->Enqueue(n).ok());
    EXPECT_EQ(outbox->Queued(), 3u);
  }
  test::HttpListener hook;
  {
    auto outbox = Open(One("ops", Webhook(hook.Url())));
    outbox->WaitIdle();
  }
  std::vector<std::string> want;
  for (const Notification& n : sent) want.push_back(NotificationToJson(n));
  EXPECT_EQ(Bodies(hook), want);
  {
    auto outbox = Open(One("ops", Webhook(hook.Url())));  // acks were kept: nothing again
    Settle();
    EXPECT_EQ(outbox->Queued(), 0u);
  }
  EXPECT_EQ(hook.Requests().size(), 3u);
}

TEST_F(OutboxTest, TornTailIsCutOff) {
  {
    auto outbox = Open(One("ops", Webhook(DownUrl())));
    for (const char* id : {"1", "2", "3"})
      ASSERT_TRUE(outbox->Enqueue(test::SampleNotification(id)).ok());
  }
  std::vector<std::string> files = SegmentFiles();
  ASSERT_EQ(files.size(), 1u);
  std::filesystem::resize_file(files[0], std::filesystem::file_size(files[0]) - 5);

  test::HttpListener hook;
  auto outbox = Open(One("ops", Webhook(hook.Url())));
  outbox->WaitIdle();
  EXPECT_EQ(Bodies(hook),
            (std::vector<std::string>{NotificationToJson(test::SampleNotification("1")),
                                      NotificationToJson(test::SampleNotification("2"))}));
}

TEST_F(OutboxTest, GarbageAfterTheLastRecordIsIgnored) {
  {
    auto outbox = Open(One("ops", Webhook(DownUrl())));
    ASSERT_TRUE(outbox->Enqueue(test::SampleNotification("1")).ok());
  }
  std::vector<std::string> files = SegmentFiles();
  ASSERT_EQ(files.size(), 1u);
  std::ofstream(files[0], std::ios::app | std::ios::binary)
      << std::string("\x30\x00\x00\x00junk", 8);

  test::HttpListener hook;
  auto outbox = Open(One("ops", Webhook(hook.Url())));
  outbox->WaitIdle();
  EXPECT_EQ(Bodies(hook),
            std::vector<std::string>{NotificationToJson(test::SampleNotification("1"))});
}

TEST_F(OutboxTest, EnqueuedNotificationSurvivesPowerCut) {
  ::trainwatch::test::FaultInjectionFileSystem fs(PosixFileSystem());
  OutboxOptions options = Options();
  {
    auto outbox = Open(One("ops", Webhook(DownUrl())), options, fs);
    ASSERT_TRUE(outbox->Enqueue(test::SampleNotification("1")).ok());
    ASSERT_TRUE(outbox->Enqueue(test::SampleNotification("2")).ok());
    ASSERT_TRUE(fs.Crash().ok());  // before any clean shutdown
  }
  fs.Restart();
  test::HttpListener hook;
  auto outbox = Open(One("ops", Webhook(hook.Url())), options, fs);
  outbox->WaitIdle();
  EXPECT_EQ(hook.Requests().size(), 2u);
}

// A full disk (ENOSPC) or EIO under the outbox: the Enqueue is refused with the disk's error,
// saying which alert, and Health() reports it (for /healthz) until an Enqueue writes again; what
// was queued stays queued and intact; once the disk takes writes again the next Enqueue succeeds
// without a restart, and a restart delivers exactly the accepted ones.
TEST_F(OutboxTest, DiskErrorRefusesTheEnqueueAndEnqueueingResumesAfterIt) {
  using Failed = ::trainwatch::test::FaultInjectionFileSystem::FailedAppend;
  for (auto [injected, failed] :
       {std::pair{Status::ResourceExhausted("injected ENOSPC"), Failed::kHalfWritten},
        std::pair{Status::IoError("injected EIO"), Failed::kNothingWritten}}) {
    SCOPED_TRACE(injected.ToString());
    for (const std::string& f : SegmentFiles()) std::filesystem::remove(f);
    ::trainwatch::test::FaultInjectionFileSystem fs(PosixFileSystem());
    {
      auto outbox = Open(One("ops", Webhook(DownUrl())), Options(), fs);
      ASSERT_TRUE(outbox->Enqueue(test::SampleNotification("1")).ok());
      EXPECT_TRUE(outbox->Health().ok());
      fs.SetWriteError(injected, failed);
      Status refused = outbox->Enqueue(test::SampleNotification("2"));
      EXPECT_EQ(refused.code(), injected.code()) << refused.ToString();
      EXPECT_THAT(refused.message(), HasSubstr("enqueueing alert 2 firing"));
      EXPECT_EQ(outbox->Queued(), 1u);
      EXPECT_EQ(outbox->Health().ToString(), refused.ToString())
          << "degraded while the disk refuses";
      fs.SetWriteError(Status::Ok());
      EXPECT_EQ(outbox->Health().ToString(), refused.ToString()) << "until an enqueue writes again";
      Status resumed = outbox->Enqueue(test::SampleNotification("3"));
      ASSERT_TRUE(resumed.ok()) << resumed.ToString();
      EXPECT_EQ(outbox->Queued(), 2u);
      EXPECT_TRUE(outbox->Health().ok()) << outbox->Health().ToString();
    }
    test::HttpListener hook;
    auto outbox = Open(One("ops", Webhook(hook.Url())), Options(), fs);
    outbox->WaitIdle();
    EXPECT_EQ(Bodies(hook),
              (std::vector<std::string>{NotificationToJson(test::SampleNotification("1")),
                                        NotificationToJson(test::SampleNotification("3"))}));
    EXPECT_EQ(SegmentFiles().size(), 1u);
    outbox->Stop();
  }
}

TEST_F(OutboxTest, RouteFilters) {
  test::HttpListener vision, all;
  RoutingTable t;
  Route r;
  r.receiver = "vision";
  r.projects = {"vision-*", "audio"};
  r.kinds = {"grad_explosion", "rule"};
  r.min_severity = Severity::kWarning;
  r.send_resolved = false;
  t.routes = {r, AllTo("all")};
  t.receivers["vision"] = Webhook(vision.Url());
  t.receivers["all"] = Webhook(all.Url());
  auto outbox = Open(std::move(t));

  auto make = [](const char* id, const char* project, const char* kind, const char* severity,
                 const char* status = "firing") {
    Notification n = test::SampleNotification(id, status);
    n.project = project;
    n.kind = kind;
    n.severity = severity;
    return n;
  };
  const std::vector<std::pair<Notification, bool>> cases = {
      {make("match", "vision-resnet", "grad_explosion", "critical"), true},
      {make("rule", "audio", "rule", "warning"), true},
      {make("project", "nlp-bert", "grad_explosion", "critical"), false},
      {make("kind", "vision-resnet", "nan", "critical"), false},
      {make("severity", "vision-resnet", "grad_explosion", "info"), false},
      {make("resolved", "vision-resnet", "grad_explosion", "critical", "resolved"), false},
  };
  std::vector<std::string> want;
  for (const auto& [n, routed] : cases) {
    ASSERT_TRUE(outbox->Enqueue(n).ok());
    if (routed) want.push_back(n.alert_id);
  }
  outbox->WaitIdle();
  std::vector<std::string> got;
  for (const auto& req : vision.Requests()) got.push_back(NotificationFromJson(req.body)->alert_id);
  EXPECT_EQ(got, want);
  EXPECT_EQ(all.Requests().size(), cases.size());
}

TEST_F(OutboxTest, NothingRoutedWritesNothing) {
  RoutingTable t;
  Route r = AllTo("ops");
  r.kinds = {"nan"};
  t.routes = {r};
  t.receivers["ops"] = Webhook(DownUrl());
  auto outbox = Open(std::move(t));
  uint64_t before = std::filesystem::file_size(SegmentFiles().at(0));
  ASSERT_TRUE(outbox->Enqueue(test::SampleNotification()).ok());
  EXPECT_EQ(outbox->Queued(), 0u);
  EXPECT_EQ(std::filesystem::file_size(SegmentFiles().at(0)), before);
}

TEST_F(OutboxTest, ReloadKeepsQueuesOfKeptReceiversAndDropsRemovedOnes) {
  auto outbox = Open(One("kept", Webhook(DownUrl())));
  {
    std::vector<std::pair<std::string, std::unique_ptr<Notifier>>> v;
    v.emplace_back("kept", Webhook(DownUrl()));
    v.emplace_back("removed", Webhook(DownUrl()));
    ASSERT_TRUE(outbox->Reload(Table(std::move(v))).ok());
  }
  ASSERT_TRUE(outbox->Enqueue(test::SampleNotification("1")).ok());
  EXPECT_EQ(outbox->Queued(), 2u);

  test::HttpListener hook;
  ASSERT_TRUE(outbox->Reload(One("kept", Webhook(hook.Url()))).ok());
  outbox->WaitIdle();
  EXPECT_EQ(Bodies(hook),
            std::vector<std::string>{NotificationToJson(test::SampleNotification("1"))});
  EXPECT_EQ(Metric("trainwatch_notifications_dropped_total"), 1);

  RoutingTable bad;
  bad.routes = {AllTo("nobody")};
  EXPECT_EQ(outbox->Reload(std::move(bad)).code(), StatusCode::kInvalidArgument);
}

TEST_F(OutboxTest, CompactionKeepsDiskBounded) {
  test::HttpListener hook;
  OutboxOptions options = Options();
  options.segment_bytes = 4096;
  auto outbox = Open(One("ops", Webhook(hook.Url())), options);
  for (int i = 0; i < 60; ++i) {
    ASSERT_TRUE(outbox->Enqueue(test::SampleNotification(std::to_string(i))).ok());
  }
  outbox->WaitIdle();
  EXPECT_EQ(hook.Requests().size(), 60u);
  uint64_t bytes = 0;
  for (const std::string& f : SegmentFiles()) bytes += std::filesystem::file_size(f);
  EXPECT_LT(bytes, 4096u + 1024u);  // 60 records would be ~40 KB
}

TEST_F(OutboxTest, OldDeliveriesAreDroppedAndQueueIsBounded) {
  OutboxOptions options = Options();
  options.max_age_seconds = 60;
  options.max_queued_per_receiver = 2;
  auto outbox = Open(One("ops", Webhook(DownUrl())), options);
  for (const char* id : {"1", "2", "3", "4"})
    ASSERT_TRUE(outbox->Enqueue(test::SampleNotification(id)).ok());
  EXPECT_LE(outbox->Queued(), 2u);
  Settle();  // the first attempt failed and the thread waits for its backoff: not mid-send when
             // time jumps
  clock_.Advance(61);
  outbox->WaitIdle();
  EXPECT_EQ(Metric("trainwatch_notifications_dropped_total"), 4);
}

TEST_F(OutboxTest, SegmentWithWrongMagicIsRenamedAside) {
  std::ofstream(dir_.Join("00000000000000000003.outbox")) << "NOT AN OUTBOX";
  test::HttpListener hook;
  auto outbox = Open(One("ops", Webhook(hook.Url())));
  ASSERT_NE(outbox, nullptr);
  EXPECT_TRUE(std::filesystem::exists(dir_.Join("00000000000000000003.outbox.corrupt")));
  ASSERT_TRUE(outbox->Enqueue(test::SampleNotification()).ok());
  outbox->WaitIdle();
  EXPECT_EQ(hook.Requests().size(), 1u);
}

TEST_F(OutboxTest, EnqueueAfterStopIsUnavailable) {
  auto outbox = Open(One("ops", Webhook(DownUrl())));
  outbox->Stop();
  EXPECT_EQ(outbox->Enqueue(test::SampleNotification()).code(), StatusCode::kUnavailable);
}

TEST_F(OutboxTest, OpenRejectsRouteToUnknownReceiver) {
  RoutingTable t;
  t.routes = {AllTo("ghost")};
  auto o = NotificationOutbox::Open(dir_.path(), std::move(t), PosixFileSystem(), clock_, Options(),
                                    logger_, metrics_);
  EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(OutboxTest, ReceiversBuiltFromConfig) {
  test::HttpListener hook;
  YAML::Node root = YAML::Load("receivers:\n  - name: ops\n    webhook: {url: \"" + hook.Url("/h") +
                               "\", secret: k}\nroutes:\n  - receiver: ops\n");
  Result<NotifyConfig> config = ParseNotifyConfig(root, "alerting.yml");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto o = NotificationOutbox::Open(dir_.path(), *config, PosixFileSystem(), clock_, Options(),
                                    logger_, metrics_);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_TRUE((*o)->Enqueue(test::SampleNotification()).ok());
  (*o)->WaitIdle();
  ASSERT_EQ(hook.Requests().size(), 1u);
  EXPECT_EQ(hook.Requests()[0].path, "/h");
  EXPECT_THAT(hook.Requests()[0].headers.at("x-trainwatch-signature"), HasSubstr("sha256="));
}

}  // namespace
}  // namespace trainwatch::notify
