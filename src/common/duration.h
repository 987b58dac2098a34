// Durations in settings, rule files and the API: "500ms", "90s", "10m", "1.5h", "1h30m", "30d",
// "2w", or a bare number of seconds.
#pragma once

#include <string_view>

#include "common/status.h"

namespace trainwatch {

// Seconds from a duration: one or more <number><unit> parts with units ms, s, m, h, d, w
// ("90s", "1.5h", "1h30m"), or a bare non-negative number of seconds ("300"). InvalidArgument
// "bad duration '<text>' (...)" otherwise; negative and non-finite values are rejected.
Result<double> ParseDuration(std::string_view text);

}  // namespace trainwatch
