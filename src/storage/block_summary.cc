#include "storage/block_summary.h"

#include <algorithm>
#include <limits>

namespace trainwatch::storage {

std::vector<BlockSummary> SummarizeBlocks(const std::vector<Point>& points) {
  std::vector<BlockSummary> blocks((points.size() + kBlockPoints - 1) / kBlockPoints);
  for (size_t b = 0; b < blocks.size(); ++b) {
    const Point* begin = points.data() + b * kBlockPoints;
    const Point* end = points.data() + std::min(points.size(), (b + 1) * kBlockPoints);
    double lo = std::numeric_limits<double>::infinity(), hi = -lo, total = 0;
    uint64_t nans = 0;
    ScanValues(begin, end, &lo, &hi, &total, &nans);
    blocks[b] = BlockSummary{lo, hi, total, static_cast<uint32_t>(nans)};
  }
  return blocks;
}

}  // namespace trainwatch::storage
