#include "api/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace trainwatch::api {

void AppendNumber(std::string* out, double v, NonFinite style) {
  if (!std::isfinite(v)) {
    const char* token = std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity");
    if (style == NonFinite::kStrings) out->push_back('"');
    out->append(token);
    if (style == NonFinite::kStrings) out->push_back('"');
    return;
  }
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, end);
}

void AppendInt(std::string* out, int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, end);
}

void AppendString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out->append(buf);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

}  // namespace trainwatch::api
