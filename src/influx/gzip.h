// Gunzip: a gzip request body (Content-Encoding: gzip, as Telegraf and the influx clients send
// line protocol) inflated with a bound on its size, so a small body cannot expand into gigabytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace trainwatch::influx {

// ResourceExhausted when the inflated body would exceed `max_bytes`; InvalidArgument when `gz` is
// not a complete gzip stream (concatenated members are inflated one after another).
Result<std::string> Gunzip(std::string_view gz, size_t max_bytes);

}  // namespace trainwatch::influx
