// One TensorBoard event record taken through what `trainwatch import` does with it
// (tools/import_run_sink.cc): DecodeEvent, then the summary decoder, or the GraphDef and its graph
// JSON. Shared by the tfevents fuzz targets.
//
// Contract checks: every view (tags, image bytes) lies inside the record; histograms are what the
// server accepts (finite, strictly increasing edges, one more than the counts, finite
// non-negative counts, at most 10,000 buckets); the graph JSON is valid JSON and, for a graph with
// plain unique names, GraphFromJson gives its nodes back.
#pragma once

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "tfevents/event.h"
#include "tfevents/graph.h"
#include "tfevents/summary.h"

namespace trainwatch::fuzz {

inline void CheckBuckets(const tfevents::Buckets& b) {
  FUZZ_CHECK(!b.counts.empty() && b.counts.size() <= 10000, "bucket count " + std::to_string(b.counts.size()));
  FUZZ_CHECK(b.edges.size() == b.counts.size() + 1, "edges are not one more than counts");
  for (size_t i = 0; i < b.edges.size(); ++i) {
    FUZZ_CHECK(std::isfinite(b.edges[i]), "edge not finite");
    FUZZ_CHECK(i == 0 || b.edges[i] > b.edges[i - 1], "edges not increasing");
  }
  for (double c : b.counts) FUZZ_CHECK(std::isfinite(c) && c >= 0, "bad count");
}

// Names GraphToJson keeps as written: no empty path segment, all of it valid UTF-8, each node once.
inline bool PlainGraph(const std::vector<tfevents::GraphNode>& nodes) {
  std::set<std::string> names;
  auto utf8 = [](std::string_view s) {
    return nlohmann::json::accept("\"" + std::string(s) + "\"") && s.find_first_of("\"\\") == s.npos &&
           std::none_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
  };
  for (const tfevents::GraphNode& n : nodes) {
    if (n.name.empty() || n.name.front() == '/' || n.name.back() == '/' ||
        n.name.find("//") != std::string::npos || !names.insert(n.name).second) {
      return false;
    }
    if (!utf8(n.name) || !utf8(n.op) || !utf8(n.device)) return false;
    for (const std::string& in : n.inputs) {
      if (!utf8(in)) return false;
    }
  }
  return true;
}

inline void CheckGraph(std::string_view graph_def) {
  auto nodes = tfevents::DecodeGraphDef(graph_def);
  if (!nodes.ok()) return;
  const std::string json = tfevents::GraphToJson(*nodes);
  FUZZ_CHECK(nlohmann::json::accept(json), "GraphToJson wrote invalid JSON");
  if (!PlainGraph(*nodes)) return;
  auto back = tfevents::GraphFromJson(json);
  FUZZ_CHECK(back.ok(), "GraphFromJson refused GraphToJson's output: " + back.status().message());
  auto sorted = [](std::vector<tfevents::GraphNode> v) {
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return v;
  };
  // GraphToJson keeps only nodes that have an op entry (every node here has a name).
  FUZZ_CHECK(sorted(*back) == sorted(*nodes), "graph JSON round trip lost nodes: " + json.substr(0, 500));
}

inline void CheckEventRecord(std::string_view record, tfevents::TagPlugins* plugins) {
  tfevents::EventView ev;
  if (!tfevents::DecodeEvent(record, &ev).ok()) return;
  FUZZ_CHECK(ViewWithin(ev.payload, record), "event payload outside the record");
  switch (ev.kind) {
    case tfevents::EventKind::kSummary: {
      tfevents::SummaryDecoder decoder(plugins);
      tfevents::DecodedSummary out;
      if (!decoder.Decode(ev.payload, &out).ok()) return;
      for (const auto& s : out.scalars) FUZZ_CHECK(ViewWithin(s.tag, record), "scalar tag outside");
      for (const auto& h : out.histograms) {
        FUZZ_CHECK(ViewWithin(h.tag, record), "histogram tag outside");
        CheckBuckets(h.buckets);
      }
      for (const auto& im : out.images) {
        FUZZ_CHECK(ViewWithin(im.tag, record) && ViewWithin(im.encoded, record), "image outside");
      }
      for (const auto& t : out.texts) FUZZ_CHECK(ViewWithin(t.tag, record), "text tag outside");
      for (const auto& s : out.skipped) FUZZ_CHECK(ViewWithin(s.tag, record), "skipped tag outside");
      return;
    }
    case tfevents::EventKind::kGraphDef:
      CheckGraph(ev.payload);
      return;
    case tfevents::EventKind::kMetaGraphDef: {
      auto graph = tfevents::GraphDefOfMetaGraph(ev.payload);
      if (graph.ok()) {
        FUZZ_CHECK(ViewWithin(*graph, record), "graph outside the record");
        CheckGraph(*graph);
      }
      return;
    }
    default:
      return;
  }
}

}  // namespace trainwatch::fuzz
