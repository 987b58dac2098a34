// What the engine hands a reader that folds every visible point of a series (the query layer's
// downsampling, query/downsample.h), so that the folding lives above storage while the choice of
// what to read — a sealed chunk's summary, its cached block summaries, or its points — stays with
// the engine that owns the chunks.
#pragma once

#include <cstdint>

#include "storage/block_summary.h"
#include "storage/encoding/point.h"

namespace trainwatch::storage {

// The steps and times a series' visible points span. Partly hidden chunks (after a rewind) may
// widen it a little: it covers the points, it need not be tight.
struct SeriesExtent {
  int64_t first_step = 0;
  int64_t last_step = 0;
  double min_time = 0;
  double max_time = 0;
};

// Engine::ScanSeries calls these on the reading thread, under the series' shared lock: they must
// be quick and must not call back into the engine.
class SeriesScanner {
 public:
  virtual ~SeriesScanner() = default;
  // A sealed chunk whose points are all visible: true if its summary stands for them (they are
  // then not read).
  virtual bool TakeSummary(const Summary& summary) = 0;
  // False: nothing in a chunk with this summary (over all its points, hidden ones included) is
  // wanted, and it is not read.
  virtual bool WantsChunk(const Summary& summary) const = 0;
  // The visible points of one chunk or of the head, by step. For a chunk, when the scan asked for
  // block summaries, `blocks` summarises the chunk's points from `base` on (SummarizeBlocks); for
  // the head, or without them, both are null.
  virtual void TakePoints(const Point* begin, const Point* end, const Point* base,
                          const BlockSummary* blocks) = 0;
  // False: the scanner never reads Point::time, so a chunk whose times come from the run clock is
  // handed over with times 0 (its clock is not read) when it is not already decoded in memory.
  virtual bool NeedsTimes() const { return true; }
};

}  // namespace trainwatch::storage
