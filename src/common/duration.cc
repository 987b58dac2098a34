#include "common/duration.h"

#include <charconv>
#include <cmath>

#include "common/strings.h"

namespace trainwatch {
namespace {

Status BadDuration(std::string_view text, std::string_view why) {
  return Status::InvalidArgument("bad duration '" + std::string(text) + "' (" + std::string(why) +
                                 ")");
}

double UnitSeconds(std::string_view unit) {
  if (unit == "ms") return 0.001;
  if (unit == "s") return 1;
  if (unit == "m") return 60;
  if (unit == "h") return 3600;
  if (unit == "d") return 86400;
  if (unit == "w") return 7 * 86400;
  return 0;
}

bool IsUnitChar(char c) { return c >= 'a' && c <= 'z'; }

}  // namespace

Result<double> ParseDuration(std::string_view text) {
  std::string_view s = TrimBlanks(text);
  if (s.empty()) return BadDuration(text, "empty");
  const char* p = s.data();
  const char* end = s.data() + s.size();
  double total = 0;
  bool first = true;
  while (p < end) {
    double v = 0;
    auto [next, ec] = std::from_chars(p, end, v, std::chars_format::fixed);
    if (ec != std::errc() || !std::isfinite(v) || v < 0)
      return BadDuration(text, "expected a non-negative number");
    p = next;
    const char* unit_start = p;
    while (p < end && IsUnitChar(*p)) ++p;
    std::string_view unit(unit_start, static_cast<size_t>(p - unit_start));
    if (unit.empty()) {
      if (first && p == end) return v;  // a bare number of seconds
      return BadDuration(text, "every number needs a unit: ms, s, m, h, d, w");
    }
    double scale = UnitSeconds(unit);
    if (scale == 0)
      return BadDuration(text, "unknown unit '" + std::string(unit) + "'; use ms, s, m, h, d or w");
    total += v * scale;
    first = false;
  }
  return total;
}

}  // namespace trainwatch
