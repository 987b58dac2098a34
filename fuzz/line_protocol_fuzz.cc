// ParseLineProtocol (src/influx/line_protocol.h): bodies of the InfluxDB /write endpoints.
//
// Checks, besides memory safety, the contract the write route relies on: every line is at most
// one point or one error, in line order, with its number; a point has a measurement and at least
// one field, finite floats, non-empty keys and tag values; its names point into the body or into
// the result's own storage; an error says which line it refuses, in InfluxDB's words.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "influx/line_protocol.h"

namespace {

using namespace trainwatch;

bool Owned(std::string_view text, std::string_view body, const influx::ParsedBody& parsed) {
  if (fuzz::ViewWithin(text, body)) return true;
  for (const std::string& s : parsed.storage) {
    if (fuzz::ViewWithin(text, s)) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  // The first byte picks the precision, so every scale is fuzzed.
  influx::Precision precision = influx::Precision::kNanoseconds;
  if (!body.empty()) {
    precision = static_cast<influx::Precision>(static_cast<unsigned char>(body[0]) % 6);
    body.remove_prefix(1);
  }
  influx::ParsedBody parsed = influx::ParseLineProtocol(body, precision);

  uint32_t lines = 0;
  for (size_t pos = 0; pos < body.size(); ++lines) {
    size_t nl = body.find('\n', pos);
    pos = nl == std::string_view::npos ? body.size() : nl + 1;
  }
  FUZZ_CHECK(parsed.points.size() + parsed.errors.size() <= lines, "more outcomes than lines");
  uint32_t last = 0;
  for (const influx::Point& p : parsed.points) {
    FUZZ_CHECK(p.line > last && p.line <= lines, "point line out of order");
    last = p.line;
    FUZZ_CHECK(!p.measurement.empty() && Owned(p.measurement, body, parsed), "measurement");
    FUZZ_CHECK(!p.fields.empty(), "a point without fields");
    for (const auto& [key, value] : p.tags) {
      FUZZ_CHECK(!key.empty() && !value.empty(), "empty tag key or value");
      FUZZ_CHECK(Owned(key, body, parsed) && Owned(value, body, parsed), "tag outside the body");
    }
    for (const auto& [key, value] : p.fields) {
      FUZZ_CHECK(!key.empty() && Owned(key, body, parsed), "field key");
      if (value.type == influx::FieldValue::Type::kFloat)
        FUZZ_CHECK(std::isfinite(value.f), "non-finite float");
      if (value.type == influx::FieldValue::Type::kString)
        FUZZ_CHECK(Owned(value.s, body, parsed), "string");
    }
  }
  last = 0;
  for (const influx::LineError& e : parsed.errors) {
    FUZZ_CHECK(e.line > last && e.line <= lines, "error line out of order: " + e.message);
    last = e.line;
    FUZZ_CHECK(e.message.starts_with("unable to parse '"), e.message);
  }
  return 0;
}
