// Encoding Events (event.proto) the way TensorBoard's own writers lay them out, for `trainwatch
// export` and for tests. Each function returns one serialized Event, to be framed with
// AppendRecord (record_writer.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tfevents/event.h"

namespace trainwatch::tfevents {

constexpr std::string_view kFileVersion = "brain.Event:2";

struct NamedFloat {
  std::string_view tag;
  float value;
};

// The first event of every file: file_version "brain.Event:2".
std::string EncodeFileVersionEvent(double wall_time);
// One Summary holding a `simple_value` per tag (float32, TensorBoard's scalar type).
std::string EncodeScalarsEvent(double wall_time, int64_t step, std::span<const NamedFloat> values);
// A v1 `histo`: bucket_limit = edges (k + 1 limits), bucket = [0, counts...] (the first bucket is
// TensorFlow's open one below edges[0], and empty), min = edges[0], max = edges[k], num = the total
// count; sum and sum_squares are not known from buckets and are written as 0. Reading it back with
// DecodeHistogramProto gives exactly `edges` and `counts`.
std::string EncodeHistogramEvent(double wall_time, int64_t step, std::string_view tag,
                                 std::span<const double> edges, std::span<const double> counts);
// A v1 `image` (Summary.Image): one encoded image of the tag at this step.
std::string EncodeImageEvent(double wall_time, int64_t step, std::string_view tag, int64_t width,
                             int64_t height, std::string_view encoded);
// The v2 `images` plugin form: a DT_STRING tensor [2 + n] of width, height and n encoded images.
// `with_metadata`: attach the plugin's SummaryMetadata (do it for the first value of each tag).
std::string EncodeImagesTensorEvent(double wall_time, int64_t step, std::string_view tag,
                                    int64_t width, int64_t height,
                                    std::span<const std::string_view> images, bool with_metadata);
// The v2 `text` plugin form: a rank-0 DT_STRING tensor.
std::string EncodeTextEvent(double wall_time, int64_t step, std::string_view tag,
                            std::string_view text, bool with_metadata);
// An event carrying a serialized GraphDef.
std::string EncodeGraphEvent(double wall_time, std::string_view graph_def);
std::string EncodeSessionLogEvent(double wall_time, int64_t step, SessionStatus status);

}  // namespace trainwatch::tfevents
