// Histograms: the distribution of one metric at one step, stored whole, one store value each
// (docs/format/store.md, "h" and "H" keys): a kind of per-step entry (step_entry.h). Unlike scalar
// points they have no heads, chunks or timelines: a histogram written again at the same step
// replaces the earlier one.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace trainwatch::storage {

// At most this many buckets per histogram (the ingest limit; decoding refuses more).
inline constexpr size_t kMaxHistogramBuckets = 10'000;

// Bucket i holds counts[i] values in [edges[i], edges[i+1]); the last bucket includes its upper
// edge. edges.size() == counts.size() + 1.
struct Histogram {
  int64_t step = 0;
  double time = 0;  // unix seconds
  std::vector<double> edges;
  std::vector<double> counts;
};

// The "h" value of a histogram (its step is in the key). Values are kept bit-exact.
std::string EncodeHistogram(const Histogram& h);
// Decodes an "h" value into *out (out->step = step). Corruption if the bytes are not one.
Status DecodeHistogram(std::string_view data, int64_t step, Histogram* out);
// The time of an encoded histogram, without decoding its buckets (retention). Corruption if the
// value is too short or of an unknown version.
Result<double> DecodeHistogramTime(std::string_view data);

}  // namespace trainwatch::storage
