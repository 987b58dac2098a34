// Splitting a write into messages NATS can carry. A JetStream message is at most the servers'
// max_payload (1 MiB by default), and one SDK batch of a run with a few images is more than that.
// A partition's part of a write is cut into several requests, each under the limit, that apply to
// the same result as the whole, in order:
//
//   - whole run batches while they fit, several to a request;
//   - a batch too large on its own becomes pieces of the same run (project, run, rank, sampled):
//     its histograms, images and texts in groups, then its rows in step ranges (each metric
//     column sliced to the range); the last piece carries the batch's metadata and heartbeat, so
//     that the run ends in the state the whole batch would have left it in.
//
// The split depends on the request's bytes alone, so a resent batch is cut the same way and each
// piece is recognised as a duplicate by its message id.
#pragma once

#include <cstddef>
#include <vector>

#include "common/status.h"
#include "trainwatch/v1/ingest.pb.h"

namespace trainwatch::cluster {

// `request` as requests of at most `limit` serialised bytes each (one, itself, when it fits).
// InvalidArgument, naming it, when one histogram, image, text or row is larger than `limit` alone.
// Writer ids and sequences are the caller's to set.
Result<std::vector<v1::WriteRequest>> SplitForMessages(const v1::WriteRequest& request,
                                                       size_t limit);

}  // namespace trainwatch::cluster
