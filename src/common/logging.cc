#include "common/logging.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace trainwatch {
namespace {

std::string_view LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "info";
}

void AppendValue(std::string* out, std::string_view v) {
  bool quote = v.empty();
  for (char c : v) {
    if (c == ' ' || c == '"' || c == '=' || static_cast<unsigned char>(c) < 0x20) quote = true;
  }
  if (!quote) {
    out->append(v);
    return;
  }
  out->push_back('"');
  for (char c : v) {
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (c == '\n') {
      out->append("\\n");
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out->push_back('?');
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

std::string Timestamp() {
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  std::time_t secs = ms / 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
}

}  // namespace

bool ParseLogLevel(std::string_view text, LogLevel* level) {
  if (text == "debug") *level = LogLevel::kDebug;
  else if (text == "info") *level = LogLevel::kInfo;
  else if (text == "warn" || text == "warning") *level = LogLevel::kWarn;
  else if (text == "error") *level = LogLevel::kError;
  else return false;
  return true;
}

void Logger::Log(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields) {
  if (level < min_level_) return;
  std::string line = "ts=" + Timestamp() + " level=" + std::string(LevelName(level)) + " msg=";
  AppendValue(&line, msg);
  for (const LogField& f : fields) {
    line.push_back(' ');
    line.append(f.key);
    line.push_back('=');
    AppendValue(&line, f.value);
  }
  line.push_back('\n');
  std::lock_guard lock(mu_);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace trainwatch
