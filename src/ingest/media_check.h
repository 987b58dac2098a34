// The checks of a run batch's images and texts. Unlike the rest of a batch, each image and text is
// checked on its own: a refused one (too large, not an image, a bad tag) is dropped and reported,
// and everything else of the batch is still stored.
#pragma once

#include <string>
#include <vector>

#include "ingest/json_lines.h"
#include "ingest/limits.h"
#include "trainwatch/v1/ingest.pb.h"

namespace trainwatch::ingest {

// Drops the images and texts of `batch` that fail their checks, appending one error for each that
// names the batch (`runs[<batch_index>] (run 'r')`), the tag, the step and why, and gives the rest
// the server's time `now` where they have none. Returns true when something was dropped and
// nothing else is left in the batch (which then should not even create its run). Costs nothing
// for a batch without images and texts.
bool CheckMedia(v1::RunBatch* batch, int batch_index, const IngestLimits& limits, double now,
                std::vector<LineError>* errors);

}  // namespace trainwatch::ingest
