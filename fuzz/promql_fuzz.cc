// ParsePromQL (src/prom/promql_parser.h): the `query` of the Prometheus API, then its evaluation
// over a few in-memory series at two times.
//
// Checks, besides memory safety and bounded recursion, that a refused query says where
// ("parse error at char N: ...") and that evaluation returns a value or an error, never throws.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "prom/promql_eval.h"
#include "prom/promql_parser.h"

namespace {

using namespace trainwatch;

class FixedSource final : public prom::SeriesSource {
 public:
  Result<std::vector<prom::SeriesPoints>> Select(const std::vector<prom::LabelMatcher>&,
                                                 int64_t from, int64_t to) override {
    std::vector<prom::SeriesPoints> out;
    for (const char* run : {"a", "b"}) {
      prom::SeriesPoints s{{{"__name__", "m"}, {"run", run}}, {}};
      for (int64_t t = 0; t <= 600'000; t += 15'000) {
        if (t >= from && t <= to) s.points.emplace_back(t, static_cast<double>(t % 7) - 3);
      }
      out.push_back(std::move(s));
    }
    return out;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view query(reinterpret_cast<const char*>(data), size);
  auto parsed = prom::ParsePromQL(query);
  if (!parsed.ok()) {
    FUZZ_CHECK(parsed.status().message().starts_with("parse error at char "),
               parsed.status().message());
    return 0;
  }
  FixedSource source;
  (void)prom::EvalInstant(**parsed, 300'000, source);
  bool scalar = false;
  (void)prom::EvalRange(**parsed, 0, 600'000, 60'000, source, &scalar);
  return 0;
}
