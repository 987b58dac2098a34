// Damaged bytes, at random: every decoder must return an error or a result that keeps its
// contract (views inside the input, histograms valid for the server), and never crash.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tfevents/event.h"
#include "tfevents/event_encoder.h"
#include "tfevents/graph.h"
#include "tfevents/record_reader.h"
#include "tfevents/record_writer.h"
#include "tfevents/summary.h"
#include "tfevents/wire_writer.h"

namespace trainwatch::tfevents {
namespace {

std::vector<std::string> Corpus() {
  std::vector<std::string> events;
  events.push_back(EncodeFileVersionEvent(1.5));
  NamedFloat scalars[] = {{"loss", 0.5f}, {"acc", 0.25f}};
  events.push_back(EncodeScalarsEvent(2.0, 7, scalars));
  const double edges[] = {0, 1, 2.5, 4};
  const double counts[] = {1, 0, 3};
  events.push_back(EncodeHistogramEvent(3.0, 8, "w", edges, counts));
  events.push_back(EncodeImageEvent(4.0, 9, "img", 2, 2, "\x89PNG fake"));
  std::string_view imgs[] = {"a", "bb"};
  events.push_back(EncodeImagesTensorEvent(4.0, 9, "imgs", 2, 2, imgs, true));
  events.push_back(EncodeTextEvent(5.0, 10, "t", "hello", true));
  events.push_back(EncodeGraphEvent(
      6.0, EncodeGraphDef({{"a/b", "Op", {"c", "^d"}, "dev"}, {"c", "Const", {}, ""}})));
  events.push_back(EncodeSessionLogEvent(7.0, 11, SessionStatus::kStart));
  {  // a v2 histogram tensor and a scalar tensor, with metadata
    std::string shape, dim1, dim2;
    WireWriter(&dim1).Int64(1, 2);
    WireWriter(&dim2).Int64(1, 3);
    WireWriter sw(&shape);
    sw.Bytes(2, dim1);
    sw.Bytes(2, dim2);
    std::string tensor;
    WireWriter t(&tensor);
    t.Int32(1, dtype::kDouble);
    t.Bytes(2, shape);
    const double rows[] = {0, 1, 2, 1, 2, 3};
    t.PackedDoubles(6, rows);
    std::string pd, md, value, summary;
    WireWriter(&pd).Bytes(1, "histograms");
    WireWriter(&md).Bytes(1, pd);
    WireWriter v(&value);
    v.Bytes(1, "h2");
    v.Bytes(9, md);
    v.Bytes(8, tensor);
    WireWriter(&summary).Bytes(1, value);
    std::string event;
    WireWriter e(&event);
    e.Double(1, 8.0);
    e.Int64(2, 12);
    e.Bytes(5, summary);
    events.push_back(event);
  }
  return events;
}

bool Inside(std::string_view view, std::string_view buffer) {
  return view.empty() || (view.data() >= buffer.data() &&
                          view.data() + view.size() <= buffer.data() + buffer.size());
}

void CheckDecoders(std::string_view record, TagPlugins& plugins) {
  EventView ev;
  if (!DecodeEvent(record, &ev).ok()) return;
  ASSERT_TRUE(Inside(ev.payload, record));
  if (ev.kind == EventKind::kSummary) {
    SummaryDecoder decoder(&plugins);
    DecodedSummary out;
    if (!decoder.Decode(ev.payload, &out).ok()) return;
    for (const auto& s : out.scalars) ASSERT_TRUE(Inside(s.tag, record));
    for (const auto& im : out.images) ASSERT_TRUE(Inside(im.encoded, record));
    for (const auto& h : out.histograms) {
      ASSERT_TRUE(Inside(h.tag, record));
      ASSERT_EQ(h.buckets.edges.size(), h.buckets.counts.size() + 1);
      for (size_t i = 0; i < h.buckets.edges.size(); ++i) {
        ASSERT_TRUE(std::isfinite(h.buckets.edges[i]));
        if (i > 0) {
          ASSERT_LT(h.buckets.edges[i - 1], h.buckets.edges[i]);
        }
      }
      for (double c : h.buckets.counts) ASSERT_TRUE(std::isfinite(c) && c >= 0);
    }
  } else if (ev.kind == EventKind::kGraphDef) {
    auto nodes = DecodeGraphDef(ev.payload);
    if (nodes.ok()) GraphToJson(*nodes);
  }
}

TEST(MalformedInputTest, MutatedEventsDecodeOrFailCleanly) {
  const std::vector<std::string> corpus = Corpus();
  std::mt19937 rng(20261130);
  TagPlugins plugins;
  for (int iter = 0; iter < 30000; ++iter) {
    std::string bytes = corpus[rng() % corpus.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      switch (rng() % 4) {
        case 0:
          bytes[rng() % bytes.size()] = static_cast<char>(rng());
          break;  // overwrite
        case 1:
          bytes.resize(rng() % bytes.size());
          break;  // truncate
        case 2:
          bytes.insert(rng() % bytes.size(), 1, static_cast<char>(rng()));
          break;  // insert
        case 3:
          bytes[rng() % bytes.size()] = static_cast<char>(0x80 | rng());
          break;  // a varint that never ends
      }
    }
    CheckDecoders(bytes, plugins);
    if (HasFatalFailure()) return;
  }
}

TEST(MalformedInputTest, DamagedFramingIsSkippedAndEveryByteAccountedFor) {
  const std::vector<std::string> corpus = Corpus();
  std::mt19937 rng(7);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string file;
    for (int i = 0; i < 20; ++i) AppendRecord(corpus[rng() % corpus.size()], &file);
    for (int e = 0; e < 3; ++e) file[rng() % file.size()] = static_cast<char>(rng());
    RecordReader reader(file);
    uint64_t consumed = 0;
    while (true) {
      RecordResult r = reader.Next();
      if (r.status == RecordStatus::kIncomplete) break;
      ASSERT_GT(r.consumed, 0u);
      ASSERT_EQ(r.offset, consumed);
      consumed += r.consumed;
      if (r.status == RecordStatus::kRecord) {
        ASSERT_TRUE(Inside(r.data, file));
      }
    }
    ASSERT_EQ(reader.position(), consumed);
    ASSERT_LE(consumed, file.size());
  }
}

}  // namespace
}  // namespace trainwatch::tfevents
