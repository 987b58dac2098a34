#include "tfevents/summary.h"

#include <charconv>

#include "tfevents/wire_reader.h"

namespace trainwatch::tfevents {
namespace {

// Summary.Value field numbers (summary.proto).
namespace value_field {
constexpr uint32_t kTag = 1;
constexpr uint32_t kSimpleValue = 2;
constexpr uint32_t kObsoleteOldStyleHistogram = 3;
constexpr uint32_t kImage = 4;
constexpr uint32_t kHisto = 5;
constexpr uint32_t kAudio = 6;
constexpr uint32_t kNodeName = 7;
constexpr uint32_t kTensor = 8;
constexpr uint32_t kMetadata = 9;
}  // namespace value_field

struct Metadata {
  std::string_view plugin_name;
  int data_class = 0;
};

bool DecodeMetadata(std::string_view bytes, Metadata* md) {
  WireReader r(bytes);
  while (r.Next()) {
    if (r.field() == 1) {  // plugin_data
      std::string_view plugin_data;
      if (!r.ReadBytes(&plugin_data)) continue;
      WireReader p(plugin_data);
      while (p.Next()) {
        if (p.field() == 1) {
          p.ReadBytes(&md->plugin_name);
        } else {
          p.Skip();
        }
      }
      if (!p.ok()) return false;
    } else if (r.field() == 4) {  // data_class
      int32_t v;
      if (r.ReadInt32(&v)) md->data_class = v;
    } else {
      r.Skip();
    }
  }
  return r.ok();
}

bool ParseDimension(std::string_view s, int64_t* v) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && end == s.data() + s.size() && *v >= 0;
}

std::string MarkdownCell(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += "<br>";
    } else if (c != '\r') {
      out += c;
    }
  }
  return out;
}

}  // namespace

PluginKind TagPlugins::KindOf(std::string_view plugin_name, int data_class) {
  if (data_class == kDataClassScalar || plugin_name == "scalars") return PluginKind::kScalars;
  if (plugin_name == "histograms") return PluginKind::kHistograms;
  if (plugin_name == "images") return PluginKind::kImages;
  if (plugin_name == "text") return PluginKind::kText;
  return plugin_name.empty() ? PluginKind::kNone : PluginKind::kOther;
}

void TagPlugins::Set(std::string_view tag, std::string_view plugin_name, int data_class) {
  const PluginKind kind = KindOf(plugin_name, data_class);
  auto it = tags_.find(tag);
  if (it == tags_.end()) {
    tags_.emplace(std::string(tag), TagPlugin{kind, std::string(plugin_name), data_class});
  } else if (kind != PluginKind::kNone) {  // metadata without a plugin says nothing new
    it->second = TagPlugin{kind, std::string(plugin_name), data_class};
  }
}

Status SummaryDecoder::Decode(std::string_view summary, DecodedSummary* out) {
  WireReader r(summary);
  while (r.Next()) {
    std::string_view value;
    if (r.field() == 1 && r.ReadBytes(&value)) {
      DecodeValue(value, out);
    } else if (r.field() != 1) {
      r.Skip();
    }
  }
  if (!r.ok()) return Status::InvalidArgument(std::string("summary: ") + r.error());
  return Status::Ok();
}

void SummaryDecoder::DecodeValue(std::string_view bytes, DecodedSummary* out) {
  std::string_view tag;
  std::string_view node_name;
  std::string_view metadata;
  std::string_view payload;
  float simple = 0;
  uint32_t which = 0;  // the `value` oneof member present, by field number
  WireReader r(bytes);
  while (r.Next()) {
    switch (r.field()) {
      case value_field::kTag:
        r.ReadBytes(&tag);
        break;
      case value_field::kNodeName:
        r.ReadBytes(&node_name);
        break;
      case value_field::kMetadata:
        r.ReadBytes(&metadata);
        break;
      case value_field::kSimpleValue:
        if (r.ReadFloat(&simple)) which = value_field::kSimpleValue;
        break;
      case value_field::kObsoleteOldStyleHistogram:
      case value_field::kImage:
      case value_field::kHisto:
      case value_field::kAudio:
      case value_field::kTensor:
        if (r.ReadBytes(&payload)) which = r.field();
        break;
      default:
        r.Skip();
    }
  }
  if (tag.empty()) tag = node_name;  // very old writers named values by node only
  if (!r.ok()) {
    out->errors.push_back({std::string(tag), std::string("summary value: ") + r.error()});
    return;
  }
  if (!metadata.empty()) {
    Metadata md;
    if (!DecodeMetadata(metadata, &md)) {
      out->errors.push_back({std::string(tag), "malformed summary metadata"});
      return;
    }
    plugins_.Set(tag, md.plugin_name, md.data_class);
  }
  switch (which) {
    case value_field::kSimpleValue:
      out->scalars.push_back({tag, double{simple}});
      return;
    case value_field::kHisto: {
      HistogramValue h{tag, {}};
      Status s = DecodeHistogramProto(payload, &h.buckets);
      if (s.ok()) {
        out->histograms.push_back(std::move(h));
      } else if (s.code() == StatusCode::kNotFound) {
        out->skipped.push_back({tag, "empty histogram"});
      } else {
        out->errors.push_back({std::string(tag), "histogram: " + s.message()});
      }
      return;
    }
    case value_field::kImage: {
      ImageValue image{tag, 0, 0, 0, {}};
      WireReader im(payload);
      while (im.Next()) {
        switch (im.field()) {
          case 1:
            im.ReadInt64(&image.height);
            break;
          case 2:
            im.ReadInt64(&image.width);
            break;
          case 4:
            im.ReadBytes(&image.encoded);
            break;
          default:
            im.Skip();
        }
      }
      if (!im.ok()) {
        out->errors.push_back({std::string(tag), std::string("image: ") + im.error()});
      } else {
        out->images.push_back(image);
      }
      return;
    }
    case value_field::kAudio:
      out->skipped.push_back({tag, "audio"});
      return;
    case value_field::kObsoleteOldStyleHistogram:
      out->skipped.push_back({tag, "obsolete_old_style_histogram"});
      return;
    case value_field::kTensor:
      DecodeTensorValue(tag, payload, out);
      return;
    default:
      return;  // metadata only
  }
}

void SummaryDecoder::DecodeTensorValue(std::string_view tag, std::string_view bytes,
                                       DecodedSummary* out) {
  const TagPlugin* plugin = plugins_.Find(tag);
  const PluginKind kind = plugin ? plugin->kind : PluginKind::kNone;
  if (kind == PluginKind::kNone || kind == PluginKind::kOther) {
    out->skipped.push_back({tag, kind == PluginKind::kNone ? "tensor without plugin metadata"
                                                           : "plugin '" + plugin->name + "'"});
    return;
  }
  auto fail = [&](std::string_view what, const Status& s) {
    out->errors.push_back({std::string(tag), std::string(what) + ": " + s.message()});
  };
  if (Status s = tensor_.Decode(bytes); !s.ok()) return fail("tensor", s);
  switch (kind) {
    case PluginKind::kScalars: {
      Result<double> v = TensorScalar(tensor_, &numbers_);
      if (!v.ok()) return fail("scalar", v.status());
      out->scalars.push_back({tag, *v});
      return;
    }
    case PluginKind::kHistograms: {
      if (tensor_.rank != 2 || tensor_.dims[1] != 3) {
        return fail("histogram",
                    Status::InvalidArgument("tensor of shape " + tensor_.ShapeString() +
                                            ", expected [k, 3]"));
      }
      if (Status s = NumericValues(tensor_, &numbers_); !s.ok()) return fail("histogram", s);
      HistogramValue h{tag, {}};
      Status s = ConvertV2Histogram(numbers_, &h.buckets);
      if (s.ok()) {
        out->histograms.push_back(std::move(h));
      } else if (s.code() == StatusCode::kNotFound) {
        out->skipped.push_back({tag, "empty histogram"});
      } else {
        fail("histogram", s);
      }
      return;
    }
    case PluginKind::kImages: {
      if (Status s = StringValues(tensor_, &strings_); !s.ok()) return fail("images", s);
      if (tensor_.rank != 1 || strings_.size() < 2) {
        return fail("images",
                    Status::InvalidArgument("tensor of shape " + tensor_.ShapeString() +
                                            ", expected [2 + n] (width, height, images)"));
      }
      int64_t width = 0;
      int64_t height = 0;
      if (!ParseDimension(strings_[0], &width) || !ParseDimension(strings_[1], &height)) {
        return fail("images", Status::InvalidArgument("width and height are not decimal numbers"));
      }
      for (size_t i = 2; i < strings_.size(); ++i) {
        out->images.push_back({tag, static_cast<uint32_t>(i - 2), width, height, strings_[i]});
      }
      return;
    }
    case PluginKind::kText: {
      if (Status s = StringValues(tensor_, &strings_); !s.ok()) return fail("text", s);
      out->texts.push_back({tag, TextTensorToMarkdown(tensor_, strings_)});
      return;
    }
    default:
      return;
  }
}

std::string TextTensorToMarkdown(const TensorView& t,
                                 const std::vector<std::string_view>& strings) {
  if (t.rank == 0) return strings.empty() ? std::string() : std::string(strings[0]);
  const size_t columns = t.rank == 1 ? 1 : static_cast<size_t>(t.dims[t.rank - 1]);
  if (strings.empty() || columns == 0) return "";
  std::string out = "|";
  for (size_t c = 0; c < columns; ++c) out += "  |";
  out += "\n|";
  for (size_t c = 0; c < columns; ++c) out += "---|";
  for (size_t i = 0; i < strings.size(); ++i) {
    if (i % columns == 0) out += "\n|";
    out += " " + MarkdownCell(strings[i]) + " |";
  }
  return out;
}

}  // namespace trainwatch::tfevents
