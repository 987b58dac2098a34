// Record: what Run::Log puts into the lock-free buffer — one step of one run, up to
// kRecordMetrics metrics as interned ids. A Log call with more metrics takes several records.
#pragma once

#include <cstdint>

namespace trainwatch::sdk {

class RunState;

inline constexpr int kRecordMetrics = 6;

struct Record {
  RunState* run;  // kept alive by the ClientCore's run registry for the core's lifetime
  int64_t step;
  double time;  // unix seconds
  uint8_t count;
  bool sampled;  // a system sample (outside the run's step clock)
  uint32_t ids[kRecordMetrics];
  double values[kRecordMetrics];
};

}  // namespace trainwatch::sdk
