#include "rules/duration.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "common/strings.h"

namespace trainwatch::rules {

std::string Hold::ToString() const {
  switch (unit) {
    case Unit::kNone:
      return "";
    case Unit::kSteps:
      return std::to_string(steps) + " steps";
    case Unit::kSeconds: {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.17gs", seconds);
      return buf;
    }
  }
  return "";
}

Result<Hold> ParseHold(std::string_view text) {
  std::string_view s = TrimBlanks(text);
  Hold hold;
  for (std::string_view suffix : {"steps", "step"}) {
    if (!s.ends_with(suffix)) continue;
    std::string_view number = TrimBlanks(s.substr(0, s.size() - suffix.size()));
    int64_t n = 0;
    auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), n);
    if (number.empty() || ec != std::errc() || ptr != number.data() + number.size() || n < 0) {
      return Status::InvalidArgument("bad hold '" + std::string(text) +
                                     "': expected a whole number of steps");
    }
    if (n > 0) {
      hold.unit = Hold::Unit::kSteps;
      hold.steps = n;
    }
    return hold;
  }
  Result<double> seconds = ParseDuration(s);
  if (!seconds.ok()) return seconds.status();
  if (*seconds > 0 && s.find_first_not_of("0123456789.") == std::string_view::npos) {
    return Status::InvalidArgument("bad hold '" + std::string(text) +
                                   "': give a unit, e.g. '10m' (record time) or '200 steps'");
  }
  if (*seconds > 0) {
    hold.unit = Hold::Unit::kSeconds;
    hold.seconds = *seconds;
  }
  return hold;
}

}  // namespace trainwatch::rules
