// Decoding `Summary` protos (summary.proto) into what trainwatch stores: scalars, histograms,
// images and text. Which plugin a tensor value belongs to is said only by the first value of each
// tag (writers send SummaryMetadata once per tag and file); TagPlugins remembers it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "tfevents/histogram.h"
#include "tfevents/tag_hash.h"
#include "tfevents/tensor.h"

namespace trainwatch::tfevents {

enum class PluginKind { kNone, kScalars, kHistograms, kImages, kText, kOther };

// SummaryMetadata.DataClass (summary.proto).
constexpr int kDataClassScalar = 1;

struct TagPlugin {
  PluginKind kind = PluginKind::kNone;
  std::string name;    // the plugin_name as written ("" when none)
  int data_class = 0;  // as written
};

// The plugin of each tag seen so far, in one run. Not thread-safe.
class TagPlugins {
 public:
  // Nullptr when the tag has not carried metadata yet.
  const TagPlugin* Find(std::string_view tag) const {
    auto it = tags_.find(tag);
    return it == tags_.end() ? nullptr : &it->second;
  }
  void Set(std::string_view tag, std::string_view plugin_name, int data_class);
  // Every tag's plugin name, e.g. to persist (watch state) and restore with Set.
  const auto& all() const { return tags_; }
  static PluginKind KindOf(std::string_view plugin_name, int data_class);

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return TagHash(s); }
  };
  std::unordered_map<std::string, TagPlugin, Hash, std::equal_to<>> tags_;
};

struct ScalarValue {
  std::string_view tag;  // views into the record
  double value;
};
struct HistogramValue {
  std::string_view tag;
  Buckets buckets;
};
struct ImageValue {
  std::string_view tag;
  uint32_t index = 0;  // position among the images of this tag and step (v2 tensors hold several)
  int64_t width = 0;
  int64_t height = 0;
  std::string_view encoded;  // PNG/JPEG/GIF bytes
};
struct TextValue {
  std::string_view tag;
  std::string text;  // Markdown
};
// A value not imported: its plugin (audio, pr_curves, hparams, ...) or encoding is not supported.
struct SkippedValue {
  std::string_view tag;
  std::string what;  // "plugin 'pr_curves'", "audio", ...
};
struct ValueError {
  std::string tag;
  std::string message;
};

// Everything one Summary held. Reuse one instance (Clear keeps capacity); the views point into
// the record, so use it before the record's buffer changes.
struct DecodedSummary {
  std::vector<ScalarValue> scalars;
  std::vector<HistogramValue> histograms;
  std::vector<ImageValue> images;
  std::vector<TextValue> texts;
  std::vector<SkippedValue> skipped;
  std::vector<ValueError> errors;  // values that were malformed; the others were still decoded

  void Clear() {
    scalars.clear();
    histograms.clear();
    images.clear();
    texts.clear();
    skipped.clear();
    errors.clear();
  }
};

// Decodes Summary values with a run's TagPlugins. Holds scratch space; not thread-safe.
class SummaryDecoder {
 public:
  explicit SummaryDecoder(TagPlugins* plugins) : plugins_(*plugins) {}

  // Appends what `summary` holds to *out. A malformed value becomes an entry of out->errors; a
  // Summary whose framing is malformed (the bytes cannot be split into values) is an error.
  Status Decode(std::string_view summary, DecodedSummary* out);

 private:
  void DecodeValue(std::string_view value, DecodedSummary* out);
  void DecodeTensorValue(std::string_view tag, std::string_view tensor, DecodedSummary* out);

  TagPlugins& plugins_;
  TensorView tensor_;
  std::vector<double> numbers_;
  std::vector<std::string_view> strings_;
};

// A string tensor as Markdown, as TensorBoard's text plugin shows it: rank 0 is the string
// itself; rank 1 a one-column table; rank 2 a table; higher ranks a table whose rows run over
// every leading index (the last dimension gives the columns).
std::string TextTensorToMarkdown(const TensorView& t, const std::vector<std::string_view>& strings);

}  // namespace trainwatch::tfevents
