// ParseInfluxQL (src/influx/influxql_parser.h): the `q` parameter of the InfluxDB /query route.
//
// Checks, besides memory safety and bounded recursion on deep nesting, that the parser either
// returns statements (none only for a query of blanks, as isspace() has them, and ';') or an error
// that says where it stopped ("... at line L, char C").
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "influx/influxql_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view query(reinterpret_cast<const char*>(data), size);
  auto parsed = trainwatch::influx::ql::ParseInfluxQL(query);
  if (parsed.ok()) {
    FUZZ_CHECK(
        !parsed->empty() || query.find_first_not_of(" \t\r\n\f\v;") == std::string_view::npos,
        "no statement and no error");
  } else {
    const std::string& m = parsed.status().message();
    FUZZ_CHECK(m.find(" at line ") != std::string::npos, m);
  }
  return 0;
}
