// ParseInfluxQL: a query string (the `q` parameter of /query) into statements (influxql_ast.h).
// A syntax error is InvalidArgument worded as InfluxDB words it: "found FROM, expected
// identifier at line 1, char 8" (the /query route prefixes "error parsing query: ").
#pragma once

#include <string_view>
#include <vector>

#include "common/status.h"
#include "influx/influxql_ast.h"

namespace trainwatch::influx::ql {

// Statements are separated by ';' (a trailing one is allowed; a query of only ';' has none).
// Keywords are case-insensitive; identifiers may be double-quoted, strings are single-quoted,
// regular expressions /slashed/.
Result<std::vector<Statement>> ParseInfluxQL(std::string_view query);

// "6h" -> 6 hours in nanoseconds; units u, µ, ms, s, m, h, d, w, combinable ("1h30m").
// InvalidArgument for anything else.
Result<int64_t> ParseInfluxDuration(std::string_view text);

}  // namespace trainwatch::influx::ql
