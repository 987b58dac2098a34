// Block summaries: the min, max, sum and NaN count of each run of kBlockPoints consecutive points
// of a decoded chunk. The ChunkCache keeps them beside the chunk's points, so that a reader folding
// a long stretch of a chunk (downsampling, query/downsample.h) scans only the stretch's ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "storage/encoding/point.h"

namespace trainwatch::storage {

inline constexpr size_t kBlockPoints = 32;

struct BlockSummary {
  double min = 0;
  double max = 0;
  double sum = 0;  // finite values
  uint32_t nan_count = 0;
};

// The blocks of `points`, block i covering points [i * kBlockPoints, (i + 1) * kBlockPoints); the
// last block may be shorter.
std::vector<BlockSummary> SummarizeBlocks(const std::vector<Point>& points);

// Folds the values of [begin, end) into running aggregates. Branch-free: a NaN fails every
// comparison, so it leaves lo and hi alone; v - v is 0 exactly for finite v. Inline: it is the
// inner loop of downsampling.
inline void ScanValues(const Point* begin, const Point* end, double* lo, double* hi, double* total,
                       uint64_t* nans) {
  for (const Point* p = begin; p != end; ++p) {
    const double v = p->value;
    *lo = v < *lo ? v : *lo;
    *hi = v > *hi ? v : *hi;
    *nans += v != v;
    *total += v - v == 0 ? v : 0.0;
  }
}

}  // namespace trainwatch::storage
