#include "report/pdf.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

extern char** environ;

namespace trainwatch::report {
namespace {

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("no file " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Tail(const std::string& text, size_t n) {
  std::string t = text.size() > n ? "…" + text.substr(text.size() - n) : text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

// Removes the directory when it goes out of scope.
struct TempDir {
  std::string path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

std::optional<std::string> FindChromium() {
  if (const char* env = std::getenv("TRAINWATCH_CHROMIUM"); env != nullptr && *env != '\0') {
    if (Executable(env)) return std::string(env);
    return std::nullopt;
  }
  for (const char* path :
       {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}) {
    if (Executable(path)) return std::string(path);
  }
  return std::nullopt;
}

Result<std::string> PrintPdf(const std::string& chromium, const std::string& html,
                             double timeout_seconds) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/trainwatch-report-XXXXXX";
  std::vector<char> templ(pattern.begin(), pattern.end());
  templ.push_back('\0');
  if (mkdtemp(templ.data()) == nullptr) {
    return Status::Unavailable("printing the PDF: cannot create a directory in " + pattern + ": " +
                               std::strerror(errno));
  }
  TempDir dir{templ.data()};
  const std::string html_path = dir.path + "/report.html";
  const std::string pdf_path = dir.path + "/report.pdf";
  const std::string log_path = dir.path + "/chromium.log";
  {
    std::ofstream out(html_path, std::ios::binary);
    out << html;
    if (!out.flush()) return Status::Unavailable("printing the PDF: cannot write " + html_path);
  }

  std::vector<std::string> args = {
      chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
      "--no-first-run", "--disable-background-networking", "--disable-component-update",
      "--disable-extensions", "--disable-sync",
      // nothing in a report is fetched; make sure of it
      "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
      "--user-data-dir=" + dir.path + "/profile", "--crash-dumps-dir=" + dir.path,
      "--no-pdf-header-footer", "--print-to-pdf=" + pdf_path, "file://" + html_path};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: a timeout kills its helpers too
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, chromium.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (spawned != 0) {
    return Status::Unavailable("printing the PDF: cannot start " + chromium + ": " +
                               std::strerror(spawned));
  }

  // Chromium gives no other sign of being done than its exit: wait for it, up to the timeout.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_seconds));
  int wstatus = 0;
  bool exited = false;
  while (!exited) {
    const pid_t got = waitpid(pid, &wstatus, WNOHANG);
    if (got == pid || (got < 0 && errno != EINTR)) {
      exited = true;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(-pid, SIGKILL);  // its helpers, and itself after a timeout
  if (!exited) {
    waitpid(pid, &wstatus, 0);
    return Status::Unavailable("printing the PDF: " + chromium + " did not finish within " +
                               std::to_string(static_cast<int>(timeout_seconds)) + " s");
  }
  Result<std::string> log_text = ReadFile(log_path);
  const std::string log = log_text.ok() ? *log_text : "";
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    const std::string how = WIFEXITED(wstatus)
                                ? "exited with status " + std::to_string(WEXITSTATUS(wstatus))
                                : "was killed by signal " + std::to_string(WTERMSIG(wstatus));
    return Status::Unavailable("printing the PDF: " + chromium + " " + how + ": " + Tail(log, 600));
  }
  Result<std::string> pdf = ReadFile(pdf_path);
  if (!pdf.ok() || pdf->rfind("%PDF", 0) != 0) {
    return Status::Unavailable("printing the PDF: " + chromium +
                               " wrote no PDF: " + Tail(log, 600));
  }
  return pdf;
}

}  // namespace trainwatch::report
