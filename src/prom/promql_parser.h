// ParsePromQL: a PromQL expression (the `query` of /api/v1/query) into a syntax tree. A syntax
// error is InvalidArgument worded as Prometheus words it ("parse error at char 5: ...").
#pragma once

#include <string_view>

#include "common/status.h"
#include "prom/promql_ast.h"

namespace trainwatch::prom {

Result<ExprPtr> ParsePromQL(std::string_view query);

// "5m", "1h30m", "500ms" (units ms, s, m, h, d, w, y) to milliseconds; InvalidArgument otherwise.
Result<int64_t> ParsePromDuration(std::string_view text);

}  // namespace trainwatch::prom
