#include "export_command.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/file_system.h"
#include "common/json.h"
#include "import_export_http.h"
#include "import_options.h"
#include "tfevents/event_encoder.h"
#include "tfevents/event_file_writer.h"
#include "tfevents/graph.h"

namespace trainwatch::tools {
namespace {

using nlohmann::json;

constexpr const char* kExportDescription =
    "Writes the run as a TensorBoard event file,\n"
    "DIR/events.out.tfevents.<unix>.<host>.trainwatch: scalars (the current timeline; values as\n"
    "float32 simple_value, TensorBoard's scalar type), histograms (histo), images (image; several\n"
    "of one tag and step as the v2 images tensor), text (the text plugin's tensor) and the model\n"
    "graph (graph_def). `tensorboard --logdir DIR` opens it.\n";

constexpr int64_t kHistogramPage = 100000;
constexpr int64_t kMediaLimit = 100000;

// What one step holds, in the order it is written.
struct StepItems {
  std::map<double, std::vector<std::pair<std::string, float>>> scalars;  // by time: one event each
  struct Histogram {
    std::string name;
    double time;
    std::vector<double> edges, counts;
  };
  std::vector<Histogram> histograms;
  struct Image {
    std::string name;
    uint32_t index;
    double time;
    int64_t width, height;
    std::string bytes;
  };
  std::vector<Image> images;
  struct Text {
    std::string name;
    double time;
    std::string value;
  };
  std::vector<Text> texts;
};

// JSON numbers, or the "NaN"/"Infinity"/"-Infinity" strings the query API uses for non-finite
// values.
double NumberOf(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "NaN") return NAN;
    if (s == "Infinity") return INFINITY;
    if (s == "-Infinity") return -INFINITY;
  }
  return NAN;
}

// The API writes negative zero as "-0", which nlohmann::json reads as the integer 0: make every
// such number (outside strings) "-0.0" first, so that -0.0 stays -0.0.
std::string KeepNegativeZero(std::string_view body) {
  std::string out;
  out.reserve(body.size());
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    out.push_back(c);
    if (in_string) {
      if (c == '\\' && i + 1 < body.size()) {
        out.push_back(body[++i]);
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '-' && i + 1 < body.size() && body[i + 1] == '0') {
      const char next = i + 2 < body.size() ? body[i + 2] : ',';
      if (next != '.' && next != 'e' && next != 'E' && !(next >= '0' && next <= '9')) {
        out += "0.0";
        ++i;
      }
    }
  }
  return out;
}

class Exporter {
 public:
  Exporter(const ServerFlags& flags, std::string run)
      : flags_(flags),
        run_(std::move(run)),
        http_(flags.server, flags.api_key, flags.tls_ca_file) {}

  Status Run(const std::string& dir) {
    TW_ASSIGN_OR_RETURN(json info, GetJson("/api/v1/run?" + Query()));
    const double start_time = info.value("start_time", 0.0);
    for (const json& m : info.at("metrics")) {
      const std::string name = m.at("name").get<std::string>();
      const std::string kind = m.value("kind", "scalar");
      if (kind == "histogram") {
        TW_RETURN_IF_ERROR(ReadHistograms(name));
      } else if (kind == "scalar") {
        TW_RETURN_IF_ERROR(ReadScalars(name));
      }  // images and texts are read by run below
    }
    TW_RETURN_IF_ERROR(ReadImages());
    TW_RETURN_IF_ERROR(ReadTexts());
    TW_RETURN_IF_ERROR(ReadGraph());
    return Write(dir, start_time);
  }

 private:
  std::string Query() const {
    return "project=" + UrlEncode(flags_.project) + "&run=" + UrlEncode(run_);
  }

  Result<HttpReply> Get(const std::string& path) {
    TW_ASSIGN_OR_RETURN(HttpReply reply, http_.Get(path));
    return reply;
  }

  Result<json> GetJson(const std::string& path) {
    TW_ASSIGN_OR_RETURN(HttpReply reply, http_.Get(path));
    if (reply.status != 200)
      return Status::InvalidArgument("GET " + path + ": HTTP " + std::to_string(reply.status) +
                                     ": " + reply.body);
    Result<json> doc = ParseJson(KeepNegativeZero(reply.body), kMaxAnswerJsonDepth);
    if (!doc.ok()) return doc.status().WithContext("GET " + path + ": the answer");
    return doc;
  }

  Status ReadScalars(const std::string& metric) {
    TW_ASSIGN_OR_RETURN(json doc,
                        GetJson("/api/v1/series?" + Query() + "&metric=" + UrlEncode(metric)));
    for (const json& series : doc.at("series")) {
      if (series.contains("error"))
        return Status::InvalidArgument(
            "series '" + metric +
            "': " + series["error"].dump(-1, ' ', false, json::error_handler_t::replace));
      for (const json& p : series.at("points")) {
        const int64_t step = p.at(0).get<int64_t>();
        double time = NumberOf(p.at(1));
        if (!std::isfinite(time)) time = 0;  // a map key must compare
        const double value = NumberOf(p.at(2));
        const auto f = static_cast<float>(value);
        if (std::isfinite(value) && static_cast<double>(f) != value) ++rounded_;
        steps_[step].scalars[time].emplace_back(metric, f);
        ++points_;
      }
    }
    return Status::Ok();
  }

  Status ReadHistograms(const std::string& name) {
    int64_t from = 0;
    while (true) {
      TW_ASSIGN_OR_RETURN(json doc, GetJson("/api/v1/histograms?" + Query() + "&metric=" +
                                            UrlEncode(name) + "&from=" + std::to_string(from) +
                                            "&limit=" + std::to_string(kHistogramPage)));
      const json& list = doc.at("histograms");
      for (const json& h : list) {
        const int64_t step = h.at("step").get<int64_t>();
        StepItems::Histogram out{name, NumberOf(h.at("time")), {}, {}};
        for (const json& e : h.at("edges")) out.edges.push_back(NumberOf(e));
        for (const json& c : h.at("counts")) out.counts.push_back(NumberOf(c));
        steps_[step].histograms.push_back(std::move(out));
        ++histograms_;
        from = step + 1;
      }
      if (static_cast<int64_t>(list.size()) < kHistogramPage) return Status::Ok();
    }
  }

  // The media API answers at most kMediaLimit entries per request.
  static void WarnIfTruncated(const json& list, const char* what) {
    if (list.size() >= static_cast<size_t>(kMediaLimit)) {
      std::fprintf(
          stderr,
          "trainwatch export: the run has more than %lld %s: only the first %lld are exported\n",
          static_cast<long long>(kMediaLimit), what, static_cast<long long>(kMediaLimit));
    }
  }

  Status ReadImages() {
    TW_ASSIGN_OR_RETURN(HttpReply reply,
                        Get("/api/v1/images?" + Query() + "&limit=" + std::to_string(kMediaLimit)));
    if (reply.status == 404 && reply.body.find("no endpoint") != std::string::npos) {
      std::fprintf(stderr,
                   "trainwatch export: this server has no images API: images not exported\n");
      return Status::Ok();
    }
    if (reply.status != 200)
      return Status::InvalidArgument("GET /api/v1/images: HTTP " + std::to_string(reply.status) +
                                     ": " + reply.body);
    json list = ParseJsonOrDiscarded(reply.body, kMaxAnswerJsonDepth);
    if (!list.is_array()) return Status::InvalidArgument("GET /api/v1/images: not a JSON array");
    WarnIfTruncated(list, "images");
    for (const json& im : list) {
      const std::string url = im.at("url").get<std::string>();
      TW_ASSIGN_OR_RETURN(HttpReply blob, Get(url));
      if (blob.status != 200)
        return Status::InvalidArgument("GET " + url + ": HTTP " + std::to_string(blob.status));
      steps_[im.at("step").get<int64_t>()].images.push_back(
          {im.at("name").get<std::string>(), im.value("index", 0u), NumberOf(im.at("time")),
           im.value("width", int64_t{0}), im.value("height", int64_t{0}), std::move(blob.body)});
      ++images_;
    }
    return Status::Ok();
  }

  Status ReadTexts() {
    TW_ASSIGN_OR_RETURN(HttpReply reply,
                        Get("/api/v1/texts?" + Query() + "&limit=" + std::to_string(kMediaLimit)));
    if (reply.status == 404 && reply.body.find("no endpoint") != std::string::npos) {
      std::fprintf(stderr, "trainwatch export: this server has no texts API: texts not exported\n");
      return Status::Ok();
    }
    if (reply.status != 200)
      return Status::InvalidArgument("GET /api/v1/texts: HTTP " + std::to_string(reply.status) +
                                     ": " + reply.body);
    json list = ParseJsonOrDiscarded(reply.body, kMaxAnswerJsonDepth);
    if (!list.is_array()) return Status::InvalidArgument("GET /api/v1/texts: not a JSON array");
    WarnIfTruncated(list, "texts");
    for (const json& t : list) {
      steps_[t.at("step").get<int64_t>()].texts.push_back({t.at("name").get<std::string>(),
                                                           NumberOf(t.at("time")),
                                                           t.at("value").get<std::string>()});
      ++texts_;
    }
    return Status::Ok();
  }

  Status ReadGraph() {
    TW_ASSIGN_OR_RETURN(HttpReply reply, Get("/api/v1/graph?" + Query()));
    if (reply.status == 404) return Status::Ok();  // no graph
    if (reply.status != 200)
      return Status::InvalidArgument("GET /api/v1/graph: HTTP " + std::to_string(reply.status));
    TW_ASSIGN_OR_RETURN(std::vector<tfevents::GraphNode> nodes,
                        tfevents::GraphFromJson(reply.body));
    graph_def_ = tfevents::EncodeGraphDef(nodes);
    has_graph_ = true;
    return Status::Ok();
  }

  Status Write(const std::string& dir, double start_time) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "localhost");
    TW_ASSIGN_OR_RETURN(
        auto writer, tfevents::EventFileWriter::Create(PosixFileSystem(), dir, start_time, host));
    if (has_graph_)
      TW_RETURN_IF_ERROR(writer->Write(tfevents::EncodeGraphEvent(start_time, graph_def_)));
    std::map<std::string, bool> text_tags_seen;
    std::map<std::string, bool> image_tags_seen;
    for (auto& [step, items] : steps_) {
      for (const auto& [time, values] : items.scalars) {
        std::vector<tfevents::NamedFloat> named;
        for (const auto& [tag, v] : values) named.push_back({tag, v});
        TW_RETURN_IF_ERROR(writer->Write(tfevents::EncodeScalarsEvent(time, step, named)));
      }
      for (const auto& h : items.histograms) {
        TW_RETURN_IF_ERROR(
            writer->Write(tfevents::EncodeHistogramEvent(h.time, step, h.name, h.edges, h.counts)));
      }
      TW_RETURN_IF_ERROR(WriteImages(*writer, step, items.images, &image_tags_seen));
      for (const auto& t : items.texts) {
        const bool first = !text_tags_seen[t.name];
        text_tags_seen[t.name] = true;
        TW_RETURN_IF_ERROR(
            writer->Write(tfevents::EncodeTextEvent(t.time, step, t.name, t.value, first)));
      }
    }
    TW_RETURN_IF_ERROR(writer->Close());
    std::printf(
        "wrote %s (%s): %llu points%s, %llu histograms, %llu images, %llu texts, %s\n",
        writer->path().c_str(), FormatBytes(static_cast<double>(writer->bytes_written())).c_str(),
        static_cast<unsigned long long>(points_),
        rounded_ ? (" (" + std::to_string(rounded_) + " rounded to float32)").c_str() : "",
        static_cast<unsigned long long>(histograms_), static_cast<unsigned long long>(images_),
        static_cast<unsigned long long>(texts_), has_graph_ ? "a graph" : "no graph");
    return Status::Ok();
  }

  // One v1 `image` per image; the images of a tag and step that has several go out together as
  // the v2 images tensor (v1 has no index).
  Status WriteImages(tfevents::EventFileWriter& writer, int64_t step,
                     std::vector<StepItems::Image>& images,
                     std::map<std::string, bool>* tags_seen) {
    std::map<std::string, std::vector<StepItems::Image*>> by_tag;
    for (auto& im : images) by_tag[im.name].push_back(&im);
    for (auto& [tag, list] : by_tag) {
      std::sort(list.begin(), list.end(), [](auto* a, auto* b) { return a->index < b->index; });
      if (list.size() == 1 && list[0]->index == 0) {
        const auto& im = *list[0];
        TW_RETURN_IF_ERROR(writer.Write(
            tfevents::EncodeImageEvent(im.time, step, tag, im.width, im.height, im.bytes)));
        continue;
      }
      std::vector<std::string_view> bytes;
      for (auto* im : list) bytes.push_back(im->bytes);
      const bool first = !(*tags_seen)[tag];
      (*tags_seen)[tag] = true;
      TW_RETURN_IF_ERROR(writer.Write(tfevents::EncodeImagesTensorEvent(
          list[0]->time, step, tag, list[0]->width, list[0]->height, bytes, first)));
    }
    return Status::Ok();
  }

  const ServerFlags& flags_;
  const std::string run_;
  HttpClient http_;
  std::map<int64_t, StepItems> steps_;
  std::string graph_def_;
  bool has_graph_ = false;
  uint64_t points_ = 0, rounded_ = 0, histograms_ = 0, images_ = 0, texts_ = 0;
};

}  // namespace

int ExportCommand(const std::vector<std::string>& args) {
  ServerFlags flags;
  std::string run;
  std::string dir;
  FlagSet set("export", kExportDescription);
  set.AddPositional("RUN", &run);
  Flag tfevents = StringFlag("--tfevents", "DIR", "the directory to write the event file to", &dir);
  tfevents.required = true;
  set.Add(std::move(tfevents));
  AddServerFlags(&set, &flags, /*with_project=*/true);
  if (auto exit_code = ParseCommandLine(set, args)) return *exit_code;
  Exporter exporter(flags, run);
  if (Status s = exporter.Run(dir); !s.ok()) {
    std::fprintf(stderr, "trainwatch export: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace trainwatch::tools
