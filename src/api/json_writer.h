// Writing JSON by hand where it is hot (exports, series, live points): numbers in their shortest
// exact form, strings escaped.
#pragma once

#include <string>
#include <string_view>

namespace trainwatch::api {

// How NaN and ±Inf are written. kBareTokens (NaN, Infinity, -Infinity) is what Python's json module
// writes and what /api/v1/write accepts: used by export. kStrings ("NaN", "Infinity", "-Infinity")
// keeps query responses valid JSON for browsers.
enum class NonFinite { kBareTokens, kStrings };

// Appends the shortest decimal that reads back as exactly `v`.
void AppendNumber(std::string* out, double v, NonFinite style);
void AppendInt(std::string* out, int64_t v);
// Appends `s` as a quoted JSON string.
void AppendString(std::string* out, std::string_view s);

}  // namespace trainwatch::api
