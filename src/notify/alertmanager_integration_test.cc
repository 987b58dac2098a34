// AlertmanagerNotifier against a real Prometheus Alertmanager (Debian's prometheus-alertmanager),
// started on a free loopback port. Skipped when the binary is not installed.
#include <curl/curl.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/testing/temp_dir.h"
#include "notify/alertmanager_notifier.h"
#include "notify/testing/http_listener.h"
#include "notify/testing/sample_notification.h"

extern char** environ;

namespace trainwatch::notify {
namespace {

using nlohmann::json;

constexpr const char* kAlertmanager = "/usr/bin/prometheus-alertmanager";

size_t Collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// GET `url`; the HTTP status (0 when no reply came) and body.
long Get(const std::string& url, std::string* body) {
  CURL* curl = curl_easy_init();
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 1000L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, body);
  long code = 0;
  if (curl_easy_perform(curl) == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(curl);
  return code;
}

// Runs Alertmanager for the lifetime of the object, its log (stderr) on a pipe.
class AlertmanagerProcess {
 public:
  explicit AlertmanagerProcess(const ::trainwatch::test::TempDir& dir) {
    port_ = test::UnusedPort();
    std::ofstream(dir.Join("am.yml"))
        << "route:\n  receiver: blackhole\nreceivers:\n  - name: blackhole\n";
    std::vector<std::string> args = {kAlertmanager,
                                     "--config.file=" + dir.Join("am.yml"),
                                     "--storage.path=" + dir.Join("data"),
                                     "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                     "--cluster.listen-address=",
                                     "--log.level=info"};  // info: for the "Listening on" line
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    if (posix_spawn(&pid_, kAlertmanager, &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    log_fd_ = fds[0];
  }
  ~AlertmanagerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (log_fd_ >= 0) ::close(log_fd_);  // kept open until then: Go dies of SIGPIPE on fd 2
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Blocks on Alertmanager's log until it says it listens (it binds the port first), then asks
  // /-/ready. False if that line did not come within `seconds` (or the process exited).
  bool WaitReady(double seconds) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    const std::string listening = "msg=\"Listening on\" address=127.0.0.1:" + std::to_string(port_);
    while (pid_ > 0 && log_.find(listening) == std::string::npos) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{log_fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
      char buffer[4096];
      ssize_t n = ::read(log_fd_, buffer, sizeof buffer);
      if (n <= 0) return false;  // exited: its log says why
      log_.append(buffer, static_cast<size_t>(n));
    }
    std::string body;
    return pid_ > 0 && Get(Url() + "/-/ready", &body) == 200;
  }
  const std::string& log() const { return log_; }

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  int log_fd_ = -1;
  std::string log_;  // what WaitReady read of its log
};

// Our alerts as Alertmanager lists them (GET /api/v2/alerts), by alert_id label.
std::map<std::string, json> ListAlerts(const std::string& base) {
  std::string body;
  std::map<std::string, json> out;
  if (Get(base + "/api/v2/alerts", &body) != 200) return out;
  for (const json& a : json::parse(body)) out[a["labels"].value("alert_id", "")] = a;
  return out;
}

TEST(AlertmanagerIntegration, FiringThenResolved) {
  if (::access(kAlertmanager, X_OK) != 0) {
    GTEST_SKIP() << kAlertmanager << " is not installed (apt-get install prometheus-alertmanager)";
  }
  ::trainwatch::test::TempDir dir;
  AlertmanagerProcess am(dir);
  ASSERT_TRUE(am.WaitReady(8)) << "Alertmanager did not become ready at " << am.Url() << "; its log:\n" << am.log();

  SystemClock clock;
  AlertmanagerNotifier notifier({am.Url(), 5}, clock);
  Notification firing = test::SampleNotification("42", "firing");
  firing.starts_at = clock.NowUnixSeconds() - 60;
  Status s = notifier.Send(firing);
  ASSERT_TRUE(s.ok()) << s.ToString();

  std::map<std::string, json> alerts = ListAlerts(am.Url());
  ASSERT_EQ(alerts.count("42"), 1u);
  const json& a = alerts["42"];
  EXPECT_EQ(a["labels"]["alertname"], "grad_explosion");
  EXPECT_EQ(a["labels"]["project"], "vision-resnet");
  EXPECT_EQ(a["labels"]["run"], "run-7");
  EXPECT_EQ(a["labels"]["severity"], "critical");
  EXPECT_EQ(a["labels"]["team"], "vision");
  EXPECT_EQ(a["annotations"]["summary"], firing.message);
  EXPECT_EQ(a["generatorURL"], firing.chart_url);
  EXPECT_EQ(a["status"]["state"], "active");

  Notification resolved = firing;
  resolved.status = "resolved";
  resolved.ends_at = clock.NowUnixSeconds() - 1;
  ASSERT_TRUE(notifier.Send(resolved).ok());
  EXPECT_EQ(ListAlerts(am.Url()).count("42"), 0u) << "a resolved alert is no longer listed";
}

}  // namespace
}  // namespace trainwatch::notify
