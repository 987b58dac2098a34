#include "storage/series.h"

#include <algorithm>

namespace trainwatch::storage {

void Series::RewindAt(int64_t step) {
  ++gen;
  rewinds.push_back(Rewind{gen, step});
  auto first_hidden = std::lower_bound(head.begin(), head.end(), step,
                                       [](const Point& p, int64_t s) { return p.step < s; });
  if (first_hidden != head.end()) {
    if (!pending_superseded.empty()) superseded_runs.push_back(std::move(pending_superseded));
    pending_superseded.assign(first_hidden, head.end());
    head.erase(first_hidden, head.end());
  }
  for (ChunkRef& chunk : chunks) {
    if (chunk.superseded || chunk.gen >= gen) continue;
    if (chunk.summary.last_step >= step) chunk.hidden_from_step = std::min(chunk.hidden_from_step, step);
  }
  has_latest = false;
  if (!head.empty()) {
    latest = head.back();
    has_latest = true;
  }
}

}  // namespace trainwatch::storage
