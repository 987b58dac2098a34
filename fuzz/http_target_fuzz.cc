// The HTTP request target (src/api/http_target.h, "/path?a=1&b=%20x") as every request's bytes
// bring it, and the query-parameter number parsers of src/api/query_params.h.
//
// Checks, besides memory safety: the path is the decoded text before the first '?'; there is one
// parameter per non-empty '&'-separated piece; decoding never grows the text; a numeric parameter
// that parses is the whole text (finite, for doubles). A second mode percent-encodes names and
// values the fuzzer chose and checks that ParseTarget gives back exactly those.
#include <fuzzer/FuzzedDataProvider.h>

#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "api/http_target.h"
#include "api/query_params.h"
#include "fuzz/fuzz_support.h"

namespace {

using trainwatch::api::ParseTarget;
using trainwatch::api::PercentDecode;
using trainwatch::api::RequestTarget;

std::string Encode(std::string_view s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

void CheckNumbers(const std::string& value) {
  int64_t i;
  if (trainwatch::api::ParseInt(value, &i)) {
    FUZZ_CHECK(std::to_string(i) == value || value.starts_with('0') || value.starts_with("-0"),
               "ParseInt accepted more than an integer: " + value);
  }
  double d;
  if (trainwatch::api::ParseDouble(value, &d)) FUZZ_CHECK(std::isfinite(d), value);
}

void RawTarget(std::string_view target) {
  RequestTarget parsed = ParseTarget(target);
  size_t q = target.find('?');
  FUZZ_CHECK(parsed.path == PercentDecode(target.substr(0, q), false), "path");
  FUZZ_CHECK(parsed.path.size() <= target.size(), "decoding grew the path");
  size_t pieces = 0;
  if (q != std::string_view::npos) {
    std::string_view query = target.substr(q + 1);
    for (size_t start = 0; start <= query.size();) {
      size_t amp = query.find('&', start);
      size_t end = amp == std::string_view::npos ? query.size() : amp;
      if (end > start) ++pieces;
      start = end + 1;
    }
  }
  FUZZ_CHECK(parsed.query.size() == pieces, "one parameter per piece");
  for (const auto& [name, value] : parsed.query) {
    FUZZ_CHECK(name.size() + value.size() <= target.size(), "decoding grew a parameter");
    CheckNumbers(value);
  }
}

void RoundTrip(FuzzedDataProvider& in) {
  std::string path = "/" + in.ConsumeRandomLengthString(64);
  std::vector<std::pair<std::string, std::string>> params;
  while (in.remaining_bytes() > 0 && params.size() < 16) {
    std::string name = in.ConsumeRandomLengthString(32);
    std::string value = in.ConsumeRandomLengthString(64);
    if (name.empty()) continue;  // an empty piece is skipped by design
    params.emplace_back(std::move(name), std::move(value));
  }
  std::string target = Encode(path);
  for (size_t i = 0; i < params.size(); ++i) {
    target += (i ? "&" : "?") + Encode(params[i].first) + "=" + Encode(params[i].second);
  }
  RequestTarget parsed = ParseTarget(target);
  FUZZ_CHECK(parsed.path == path, target);
  FUZZ_CHECK(parsed.query.size() == params.size(), target);
  for (const auto& [name, value] : params) {
    bool found = false;
    auto [lo, hi] = parsed.query.equal_range(name);
    for (auto it = lo; it != hi && !found; ++it) found = it->second == value;
    FUZZ_CHECK(found, "lost parameter " + name + " in " + target);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] == 'R') {  // round trip
    FuzzedDataProvider in(data + 1, size - 1);
    RoundTrip(in);
    return 0;
  }
  RawTarget(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
