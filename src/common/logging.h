// Structured logging: one logfmt line per event on stderr,
//   ts=2026-11-29T18:00:00.123Z level=info msg="wal replayed" records=120 torn_tail_bytes=0
// A Logger is built by main and handed to whoever logs. Thread-safe.
#pragma once

#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace trainwatch {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// Parses "debug", "info", "warn", "error"; false on anything else.
bool ParseLogLevel(std::string_view text, LogLevel* level);

// One key=value pair of a log line. Values are quoted when they need it.
struct LogField {
  LogField(std::string_view k, std::string_view v) : key(k), value(v) {}
  LogField(std::string_view k, const std::string& v) : key(k), value(v) {}
  LogField(std::string_view k, const char* v) : key(k), value(v) {}
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  LogField(std::string_view k, T v) : key(k), value(std::to_string(v)) {}
  std::string_view key;
  std::string value;
};

class Logger {
 public:
  explicit Logger(LogLevel min_level = LogLevel::kInfo) : min_level_(min_level) {}
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  void Log(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields = {});
  void Debug(std::string_view msg, std::initializer_list<LogField> f = {}) { Log(LogLevel::kDebug, msg, f); }
  void Info(std::string_view msg, std::initializer_list<LogField> f = {}) { Log(LogLevel::kInfo, msg, f); }
  void Warn(std::string_view msg, std::initializer_list<LogField> f = {}) { Log(LogLevel::kWarn, msg, f); }
  void Error(std::string_view msg, std::initializer_list<LogField> f = {}) { Log(LogLevel::kError, msg, f); }

 private:
  const LogLevel min_level_;
  std::mutex mu_;  // serialises writes to stderr
};

}  // namespace trainwatch
