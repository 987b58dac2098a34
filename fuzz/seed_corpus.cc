// Writes the binary seeds of the fuzz corpora (fuzz/corpus/<target>/gen_*), made with the
// project's own encoders so that they are exactly what the readers meet: write requests, event
// files and events, images, spool, outbox and WAL segments, each also in the "framed" input form
// of its target where it has one. The text seeds (JSON, YAML, expressions, targets) are plain
// files beside them. Run after a format changes:
//
//   build-fuzz/bin/fuzz_seed_corpus fuzz/corpus
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/testing/image_test_util.h"
#include "fuzz/fuzz_support.h"
#include "notify/notification.h"
#include "notify/outbox_format.h"
#include "notify/testing/sample_notification.h"
#include "spool.h"
#include "storage/binary_io.h"
#include "storage/wal/wal_log.h"
#include "tfevents/event_encoder.h"
#include "tfevents/graph.h"
#include "tfevents/record_writer.h"
#include "tfevents/tensor.h"
#include "tfevents/wire_writer.h"
#include "trainwatch/v1/ingest.pb.h"

namespace {

using namespace trainwatch;
namespace images = test_images;

std::filesystem::path g_root;

void Put(const std::string& target, const std::string& name, std::string_view bytes) {
  std::filesystem::create_directories(g_root / target);
  std::ofstream(g_root / target / ("gen_" + name), std::ios::binary)
      .write(bytes.data(), bytes.size());
}

// <u16 length><bytes> per piece: the framed form of the checksummed formats' targets.
std::string Pieces(const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& p : pieces) {
    out.push_back(static_cast<char>(p.size() & 0xff));
    out.push_back(static_cast<char>(p.size() >> 8));
    out += p;
  }
  return out;
}

v1::WriteRequest SampleWrite() {
  v1::WriteRequest request;
  request.set_writer_id("w-1");
  request.set_sequence(7);
  v1::RunBatch* batch = request.add_runs();
  batch->set_project("p");
  batch->set_run("r");
  for (int i = 0; i < 3; ++i) {
    batch->add_steps(10 + i);
    batch->add_times(1767225600.0 + i);
  }
  v1::MetricColumn* dense = batch->add_metrics();
  dense->set_name("loss");
  for (double v : {0.5, 0.4, 0.3}) dense->add_values(v);
  v1::MetricColumn* sparse = batch->add_metrics();
  sparse->set_name("val/acc");
  sparse->add_rows(2);
  sparse->add_values(0.9);
  v1::Histogram* h = batch->add_histograms();
  h->set_name("weights");
  h->set_step(10);
  for (double e : {0.0, 1.0, 2.5}) h->add_edges(e);
  for (double c : {3.0, 4.0}) h->add_counts(c);
  v1::Image* image = batch->add_images();
  image->set_name("samples");
  image->set_step(10);
  image->set_data(images::Png(4, 3));
  image->set_caption("a caption");
  v1::Text* text = batch->add_texts();
  text->set_name("notes");
  text->set_step(11);
  text->set_value("# hello");
  batch->mutable_heartbeat()->set_interval_seconds(30);
  v1::RunMetadata* meta = batch->mutable_metadata();
  meta->set_name("Run r");
  meta->set_group("g");
  meta->add_tags("t1");
  meta->set_config_json(R"({"lr":0.1,"model":{"depth":4}})");
  meta->set_status("running");
  meta->set_host("host-1");
  meta->set_graph_json(R"({"name":"Net","type":"Net","children":[{"name":"fc","type":"Linear"}]})");
  v1::RunBatch* rewind = request.add_runs();
  rewind->set_run("r2");
  rewind->mutable_metadata()->set_rewind_step(5);
  return request;
}

void WriteRequests() {
  Put("write_request", "full.pb", SampleWrite().SerializeAsString());
  v1::WriteRequest over;  // new metrics on the run that holds two: over the per-run limit
  v1::RunBatch* batch = over.add_runs();
  batch->set_project("p");
  batch->set_run("r");
  batch->add_steps(2);
  for (const char* name : {"loss", "m1", "m2", "m3"}) {
    v1::MetricColumn* c = batch->add_metrics();
    c->set_name(name);
    c->add_values(1);
  }
  Put("write_request", "series_limits.pb", over.SerializeAsString());
  v1::WriteRequest webp;
  v1::Image* im = webp.add_runs()->add_images();
  webp.mutable_runs(0)->set_run("r3");
  im->set_name("i");
  im->set_data(images::WebpLossless(8, 8));
  Put("write_request", "webp_image.pb", webp.SerializeAsString());
}

std::vector<std::string> Events() {
  using namespace tfevents;
  std::vector<std::string> events;
  events.push_back(EncodeFileVersionEvent(1.5));
  NamedFloat scalars[] = {{"loss", 0.5f}, {"acc", 0.25f}};
  events.push_back(EncodeScalarsEvent(2.0, 7, scalars));
  const double edges[] = {0, 1, 2.5, 4};
  const double counts[] = {1, 0, 3};
  events.push_back(EncodeHistogramEvent(3.0, 8, "w", edges, counts));
  events.push_back(EncodeImageEvent(4.0, 9, "img", 2, 2, images::Png(2, 2)));
  const std::string png = images::Png(1, 1), gif = images::Gif(1, 1);
  std::string_view imgs[] = {png, gif};
  events.push_back(EncodeImagesTensorEvent(4.0, 9, "imgs", 1, 1, imgs, true));
  events.push_back(EncodeTextEvent(5.0, 10, "t", "hello **world**", true));
  const std::string graph =
      EncodeGraphDef({{"dense/MatMul", "MatMul", {"x", "dense/w:0", "^init"}, "/cpu:0"},
                      {"dense/w", "VariableV2", {}, ""},
                      {"x", "Placeholder", {}, ""}});
  events.push_back(EncodeGraphEvent(6.0, graph));
  events.push_back(EncodeSessionLogEvent(7.0, 11, SessionStatus::kStart));
  {  // a MetaGraphDef (field 9) holding the GraphDef in its field 2
    std::string meta, event;
    WireWriter(&meta).Bytes(2, graph);
    WireWriter e(&event);
    e.Double(1, 6.5);
    e.Bytes(9, meta);
    events.push_back(event);
  }
  // v2 tensors with plugin metadata: a [2, 3] double histogram, a float scalar, a rank-2 text
  // table from tensor_content (TensorFlow's string-list encoding).
  auto tensor_event = [&](std::string_view tag, std::string_view plugin, int dtype,
                          std::vector<int64_t> dims, const std::string& fill) {
    std::string shape;
    WireWriter sw(&shape);
    for (int64_t d : dims) {
      std::string dim;
      WireWriter(&dim).Int64(1, d);
      sw.Bytes(2, dim);
    }
    std::string tensor;
    WireWriter t(&tensor);
    t.Int32(1, dtype);
    t.Bytes(2, shape);
    tensor += fill;
    std::string pd, md, value, summary, event;
    WireWriter(&pd).Bytes(1, plugin);
    WireWriter(&md).Bytes(1, pd);
    WireWriter v(&value);
    v.Bytes(1, tag);
    v.Bytes(9, md);
    v.Bytes(8, tensor);
    WireWriter(&summary).Bytes(1, value);
    WireWriter e(&event);
    e.Double(1, 8.0);
    e.Int64(2, 12);
    e.Bytes(5, summary);
    events.push_back(event);
  };
  {
    std::string fill;
    const double rows[] = {0, 1, 2, 1, 2, 3};
    WireWriter(&fill).PackedDoubles(6, rows);
    tensor_event("h2", "histograms", dtype::kDouble, {2, 3}, fill);
  }
  {
    std::string fill;
    const float v[] = {0.75f};
    WireWriter(&fill).PackedFloats(5, v);
    tensor_event("s2", "scalars", dtype::kFloat, {}, fill);
  }
  {
    std::string content, fill;
    for (const char* s : {"a", "bb", "c", "dd"})
      content.push_back(static_cast<char>(std::strlen(s)));
    content += "abbcdd";
    WireWriter(&fill).Bytes(4, content);
    tensor_event("table", "text", dtype::kString, {2, 2}, fill);
  }
  return events;
}

void EventSeeds() {
  const std::vector<std::string> events = Events();
  std::string file;
  for (size_t i = 0; i < events.size(); ++i) {
    Put("tfevents_event", "event_" + std::to_string(i) + ".pb", events[i]);
    tfevents::AppendRecord(events[i], &file);
  }
  Put("tfevents_file", "events.out.tfevents", file);
  Put("tfevents_file", "torn.out.tfevents", file.substr(0, file.size() - 5));
  Put("tfevents_file", "framed.bin", "F" + std::string(1, '\0') + Pieces(events));
  Put("tfevents_file", "framed_flip.bin", "F" + std::string(1, '\x11') + Pieces(events));
}

void ImageSeeds() {
  Put("image_header", "rgb.png", images::Png(5, 3));
  Put("image_header", "grey16.png", images::Png(300, 2, 16, 0));
  Put("image_header", "baseline.jpg", images::Jpeg(0xC0, 640, 480));
  Put("image_header", "progressive.jpg", images::Jpeg(0xC2, 1, 65535));
  Put("image_header", "small.gif", images::Gif(7, 9));
  Put("image_header", "lossy.webp", images::WebpLossy(16, 9));
  Put("image_header", "lossless.webp", images::WebpLossless(16384, 1));
  Put("image_header", "extended.webp", images::WebpExtended(1 << 24, 3));
}

void OutboxSeeds() {
  notify::Notification firing = notify::test::SampleNotification();
  notify::Notification resolved = firing;
  resolved.status = "resolved";
  resolved.ends_at = 1767229200;
  resolved.time = std::nan("");
  std::string file(notify::kOutboxMagic);
  notify::EncodeDelivery(1, 1767225601, "ops", notify::NotificationToJson(firing), &file);
  notify::EncodeDelivery(2, 1767225602, "chat", notify::NotificationToJson(resolved), &file);
  notify::EncodeAck(1, notify::AckOutcome::kDelivered, &file);
  notify::EncodeAck(2, notify::AckOutcome::kDropped, &file);
  Put("outbox_segment", "segment.outbox", file);
  Put("outbox_segment", "torn.outbox", file.substr(0, file.size() - 3));
  // The framed form: record bodies (type byte first), checksummed by the harness.
  std::string delivery, ack;
  notify::EncodeDelivery(3, 1767225603, "am", notify::NotificationToJson(firing), &delivery);
  notify::EncodeAck(3, notify::AckOutcome::kDelivered, &ack);
  Put("outbox_segment", "framed.bin", "F" + Pieces({delivery.substr(8), ack.substr(8)}));
}

void SpoolSeeds() {
  fuzz::MemFileSystem fs;
  {
    auto spool = sdk::Spool::Open(fs, "/spool", sdk::SpoolOptions{});
    if (!spool.ok()) std::abort();
    uint64_t dropped = 0;
    for (uint64_t seq = 1; seq <= 3; ++seq) {
      v1::WriteRequest request = SampleWrite();
      request.set_sequence(seq);
      if (!(*spool)->Append({seq, 4, request.SerializeAsString()}, &dropped).ok()) std::abort();
    }
    if (!(*spool)->Close().ok()) std::abort();
  }
  const std::string file = *fs.ReadFile("/spool/00000000000000000001.seg");
  Put("spool_segment", "segment.seg", file);
  Put("spool_segment", "torn.seg", file.substr(0, file.size() - 9));
  v1::WriteRequest small;
  small.add_runs()->set_run("r");
  Put("spool_segment", "framed.bin",
      "F" + Pieces({SampleWrite().SerializeAsString(), small.SerializeAsString()}));
}

void WalSeeds() {
  fuzz::MemFileSystem fs;
  std::vector<std::string> records;
  {
    auto log = storage::wal::WalLog::Open(fs, "/wal");
    if (!log.ok()) std::abort();
    for (int i = 0; i < 3; ++i) {
      records.push_back("\x01" + SampleWrite().SerializeAsString().substr(0, 40 + i));
      std::promise<void> done;
      (*log)->Append(records.back(), [&](const Status& s, uint64_t) {
        if (!s.ok()) std::abort();
        done.set_value();
      });
      done.get_future().wait();
    }
  }
  const std::string file = *fs.ReadFile("/wal/00000000000000000001.wal");
  Put("wal_segment", "segment.wal", file);
  Put("wal_segment", "torn.wal", file.substr(0, file.size() - 7));
  std::string framed = "F";
  storage::PutFixed64(&framed, 41);  // first LSN
  Put("wal_segment", "framed.bin", framed + std::string(1, '\0') + Pieces(records));
  Put("wal_segment", "framed_gap.bin", framed + std::string(1, '\x01') + Pieces(records));
  Put("wal_segment", "framed_bad_crc.bin", framed + std::string(1, '\x02') + Pieces(records));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (fuzz/corpus)\n", argv[0]);
    return 2;
  }
  g_root = argv[1];
  WriteRequests();
  EventSeeds();
  ImageSeeds();
  OutboxSeeds();
  SpoolSeeds();
  WalSeeds();
  return 0;
}
