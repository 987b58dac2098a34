// TensorBoard histograms to trainwatch's buckets (edges + counts: counts[i] values in
// [edges[i], edges[i+1]), edges finite and strictly increasing). The rules, with examples, are in
// docs/tensorboard.md#histograms.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace trainwatch::tfevents {

struct Buckets {
  std::vector<double> edges;
  std::vector<double> counts;
};

// A v1 `HistogramProto` (histogram.proto: bucket i holds the values in [bucket_limit[i-1],
// bucket_limit[i]), bucket 0 starting at -DBL_MAX). Decodes and converts:
//  - an empty bucket at either end whose outer bound is open (bucket 0, or a last limit of
//    ±DBL_MAX or beyond) is dropped; other buckets, empty or not, are kept;
//  - the outer edges are the kept buckets' own bounds, tightened to `min` (`max`) when it lies
//    inside the first (last) kept bucket, as TensorBoard draws them;
//  - an outer edge that is still open (a non-empty bucket 0 without a usable `min`, say) makes
//    the histogram an error, as do counts that are negative or not finite, limits that do not
//    increase, and more than `max_buckets` buckets.
// A histogram with no non-empty bucket yields NotFound ("empty histogram").
Status DecodeHistogramProto(std::string_view histogram_proto, Buckets* out,
                            size_t max_buckets = 10000);

// The rule above on already-decoded fields (exposed for tests).
Status ConvertV1Histogram(double min, double max, std::span<const double> limits,
                          std::span<const double> counts, Buckets* out, size_t max_buckets = 10000);

// A v2 histogram tensor's values, row-major [k, 3]: (left edge, right edge, count) per bucket.
//  - buckets of zero width and zero count are dropped (TensorFlow pads with them when every value
//    is equal);
//  - a single remaining bucket of zero width (every value v) becomes [v - 0.5, v + 0.5], the
//    convention of TensorBoard's own v2 summary;
//  - a gap between buckets becomes an empty bucket; overlapping or reversed buckets, zero-width
//    buckets among others, negative or non-finite counts and non-finite edges are errors.
// No bucket at all (k = 0) yields NotFound ("empty histogram").
Status ConvertV2Histogram(std::span<const double> rows, Buckets* out, size_t max_buckets = 10000);

}  // namespace trainwatch::tfevents
