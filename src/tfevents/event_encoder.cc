#include "tfevents/event_encoder.h"

#include <vector>

#include "tfevents/tensor.h"
#include "tfevents/wire_writer.h"

namespace trainwatch::tfevents {
namespace {

constexpr int kDataClassTensor = 2;
constexpr int kDataClassBlobSequence = 3;

std::string EventWith(double wall_time, int64_t step, uint32_t field, std::string_view payload) {
  std::string out;
  WireWriter w(&out);
  w.Double(event_field::kWallTime, wall_time);
  if (step != 0) w.Int64(event_field::kStep, step);
  w.Bytes(field, payload);
  return out;
}

std::string SummaryOf(std::string_view value) {
  std::string summary;
  WireWriter(&summary).Bytes(1, value);
  return summary;
}

std::string PluginMetadata(std::string_view plugin_name, std::string_view content, int data_class) {
  std::string plugin_data;
  WireWriter p(&plugin_data);
  p.Bytes(1, plugin_name);
  if (!content.empty()) p.Bytes(2, content);
  std::string md;
  WireWriter m(&md);
  m.Bytes(1, plugin_data);
  m.Int32(4, data_class);
  return md;
}

std::string StringTensor(std::span<const std::string_view> strings, bool rank0) {
  std::string shape;
  if (!rank0) {
    std::string dim;
    WireWriter(&dim).Int64(1, static_cast<int64_t>(strings.size()));
    WireWriter(&shape).Bytes(2, dim);
  }
  std::string tensor;
  WireWriter t(&tensor);
  t.Int32(1, dtype::kString);
  t.Bytes(2, shape);
  for (std::string_view s : strings) t.Bytes(8, s);
  return tensor;
}

std::string TensorValue(std::string_view tag, std::string_view tensor, std::string_view metadata) {
  std::string value;
  WireWriter v(&value);
  v.Bytes(1, tag);
  if (!metadata.empty()) v.Bytes(9, metadata);
  v.Bytes(8, tensor);
  return value;
}

}  // namespace

std::string EncodeFileVersionEvent(double wall_time) {
  std::string out;
  WireWriter w(&out);
  w.Double(event_field::kWallTime, wall_time);
  w.Bytes(event_field::kFileVersion, kFileVersion);
  return out;
}

std::string EncodeScalarsEvent(double wall_time, int64_t step, std::span<const NamedFloat> values) {
  std::string summary;
  WireWriter s(&summary);
  std::string value;
  for (const NamedFloat& nv : values) {
    value.clear();
    WireWriter v(&value);
    v.Bytes(1, nv.tag);
    v.Float(2, nv.value);
    s.Bytes(1, value);
  }
  return EventWith(wall_time, step, event_field::kSummary, summary);
}

std::string EncodeHistogramEvent(double wall_time, int64_t step, std::string_view tag,
                                 std::span<const double> edges, std::span<const double> counts) {
  std::string histo;
  WireWriter h(&histo);
  double total = 0;
  for (double c : counts) total += c;
  h.Double(1, edges.empty() ? 0 : edges.front());
  h.Double(2, edges.empty() ? 0 : edges.back());
  h.Double(3, total);
  h.PackedDoubles(6, edges);
  std::vector<double> buckets;
  buckets.reserve(counts.size() + 1);
  buckets.push_back(0);
  buckets.insert(buckets.end(), counts.begin(), counts.end());
  h.PackedDoubles(7, buckets);
  std::string value;
  WireWriter v(&value);
  v.Bytes(1, tag);
  v.Bytes(5, histo);
  return EventWith(wall_time, step, event_field::kSummary, SummaryOf(value));
}

std::string EncodeImageEvent(double wall_time, int64_t step, std::string_view tag, int64_t width,
                             int64_t height, std::string_view encoded) {
  std::string image;
  WireWriter i(&image);
  i.Int64(1, height);
  i.Int64(2, width);
  i.Bytes(4, encoded);
  std::string value;
  WireWriter v(&value);
  v.Bytes(1, tag);
  v.Bytes(4, image);
  return EventWith(wall_time, step, event_field::kSummary, SummaryOf(value));
}

std::string EncodeImagesTensorEvent(double wall_time, int64_t step, std::string_view tag,
                                    int64_t width, int64_t height,
                                    std::span<const std::string_view> images, bool with_metadata) {
  const std::string w = std::to_string(width);
  const std::string h = std::to_string(height);
  std::vector<std::string_view> strings{w, h};
  strings.insert(strings.end(), images.begin(), images.end());
  std::string content;  // ImagePluginData{max_images_per_step: n}
  WireWriter(&content).Int32(1, static_cast<int32_t>(images.size()));
  const std::string metadata =
      with_metadata ? PluginMetadata("images", content, kDataClassBlobSequence) : "";
  return EventWith(wall_time, step, event_field::kSummary,
                   SummaryOf(TensorValue(tag, StringTensor(strings, false), metadata)));
}

std::string EncodeTextEvent(double wall_time, int64_t step, std::string_view tag,
                            std::string_view text, bool with_metadata) {
  const std::string metadata = with_metadata ? PluginMetadata("text", "", kDataClassTensor) : "";
  std::string_view strings[] = {text};
  return EventWith(wall_time, step, event_field::kSummary,
                   SummaryOf(TensorValue(tag, StringTensor(strings, true), metadata)));
}

std::string EncodeGraphEvent(double wall_time, std::string_view graph_def) {
  return EventWith(wall_time, 0, event_field::kGraphDef, graph_def);
}

std::string EncodeSessionLogEvent(double wall_time, int64_t step, SessionStatus status) {
  std::string log;
  WireWriter(&log).Varint(1, static_cast<uint64_t>(status));
  return EventWith(wall_time, step, event_field::kSessionLog, log);
}

}  // namespace trainwatch::tfevents
