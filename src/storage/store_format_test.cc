// The examples of docs/format/store.md, checked against the real store: the examples are written
// through ChunkStore and its parts into a real RocksDB database, which is then read raw. Every
// documented key must hold exactly the documented value, and the documented values decode to what
// was written. The "d" example is the chunk of chunk.md's example (encoding/chunk_format_test.cc).
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "common/sha256.h"
#include "common/testing/doc_examples.h"
#include "common/testing/temp_dir.h"
#include "storage/chunk_store.h"
#include "storage/encoding/chunk_codec.h"
#include "storage/histogram.h"
#include "storage/media.h"

namespace trainwatch::storage {
namespace {

const std::string kStoreDoc = std::string(TRAINWATCH_DOCS_DIR) + "/format/store.md";
const std::string kChunkDoc = std::string(TRAINWATCH_DOCS_DIR) + "/format/chunk.md";

// What the examples hold (the document states the same values in prose).
const SeriesKey kLoss{"p", "r", "loss"};
constexpr double kTime = 1000.0;
constexpr int64_t kStep = 5;

std::vector<Point> ChunkPointsOfExample() {
  return {{0, 1000.0, 0.5}, {1, 1001.0, 0.25}, {2, 1002.0, 0.125}};
}

Histogram HistogramOfExample() {
  Histogram h;
  h.step = kStep;
  h.time = kTime;
  h.edges = {0, 1, 2};
  h.counts = {3, 4};
  return h;
}

ImageEntry ImageOfExample() {
  ImageEntry e;
  e.time = kTime;
  e.caption = "c";
  e.sha256 = Sha256("abc");  // the bytes "abc" stand for an image: the store does not look inside
  e.format = ImageFormat::kPng;
  e.width = 1;
  e.height = 1;
  e.size = 3;
  return e;
}

TextEntry TextOfExample() {
  TextEntry e;
  e.time = kTime;
  e.value = "hi";
  return e;
}

class StoreFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto examples = test::ReadDocExamples(kStoreDoc);
    ASSERT_TRUE(examples.ok()) << examples.status().ToString();
    examples_ = *examples;
    auto chunk_examples = test::ReadDocExamples(kChunkDoc);
    ASSERT_TRUE(chunk_examples.ok()) << chunk_examples.status().ToString();
    chunk_examples_ = *chunk_examples;
    WriteExamples();
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::OpenForReadOnly(rocksdb::Options(), dir_.Join("store"), &raw);
    ASSERT_TRUE(s.ok()) << s.ToString();
    db_.reset(raw);
  }

  // Everything the examples show, written by the real code.
  void WriteExamples() {
    auto opened = ChunkStore::Open(dir_.Join("store"));
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    ChunkStore& store = **opened;
    const std::vector<Point> points = ChunkPointsOfExample();
    auto encoded = EncodeChunk(points);
    ASSERT_TRUE(encoded.ok());
    StoredChunk chunk;
    chunk.series_id = 1;
    chunk.ref.chunk_no = 0;
    chunk.ref.encoded_bytes = encoded->size();
    for (const Point& p : points) chunk.ref.summary.Add(p);
    SeriesRecord series;
    series.id = 1;
    series.key = kLoss;
    series.next_chunk_no = 1;
    series.flushed_lsn = 7;
    ASSERT_TRUE(store.PutSeal(series, {chunk}, {*encoded}).ok());
    ASSERT_TRUE(store.runs().PutRun("p", "r", "{}").ok());
    SeriesRecord ranked;
    ranked.id = 2;
    ranked.key = SeriesKey{"p", "r", "loss", 3};
    ASSERT_TRUE(store.PutSeries(ranked).ok());
    ASSERT_TRUE(store.runs().PutRank("p", "r", 3, "{}").ok());

    BlobChange change;
    const Histogram h = HistogramOfExample();
    ASSERT_TRUE(store.entries(StepEntryType::kHistogram)
                    .Put(kLoss, {}, kStep, 0, kTime, EncodeHistogram(h), {}, &change)
                    .ok());
    ASSERT_TRUE(store.entries(StepEntryType::kImage)
                    .Put({"p", "r", "img"}, {}, kStep, 0, kTime, EncodeImageEntry(ImageOfExample()),
                         "abc", &change)
                    .ok());
    ASSERT_TRUE(store.entries(StepEntryType::kText)
                    .Put({"p", "r", "log"}, {}, kStep, 0, kTime, EncodeTextEntry(TextOfExample()),
                         {}, &change)
                    .ok());
    ASSERT_TRUE(store.writers().Put("w1", 42).ok());
    ASSERT_TRUE(store.checkpoint().Put(8).ok());
  }

  // The example `name`: its key must hold exactly its value in the store the code wrote (or
  // merely exist, for an example with no value part). Returns the value.
  std::string CheckExample(const std::string& name) {
    auto it = examples_.find(name);
    if (it == examples_.end()) {
      ADD_FAILURE() << "store.md has no example '" << name << "'";
      return "";
    }
    const test::DocExample& example = it->second;
    auto key = example.find("key");
    if (key == example.end()) {
      ADD_FAILURE() << "example '" << name << "' has no key";
      return "";
    }
    std::string stored;
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), key->second, &stored);
    if (!s.ok()) {
      ADD_FAILURE() << "example '" << name << "': the store holds no key\n"
                    << test::HexLines(key->second) << "\nkeys under its prefix:\n"
                    << KeysUnder(key->second.substr(0, 1));
      return "";
    }
    auto value = example.find("value");
    if (value != example.end()) {
      EXPECT_EQ(value->second, stored) << "example '" << name << "': the store holds\n"
                                       << test::HexLines(stored);
    }
    return stored;
  }

  std::string KeysUnder(const std::string& prefix) const {
    std::string out;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      out += test::HexLines(it->key().ToString()) + "\n";
    }
    return out;
  }

  test::TempDir dir_;
  std::map<std::string, test::DocExample> examples_;
  std::map<std::string, test::DocExample> chunk_examples_;
  std::unique_ptr<rocksdb::DB> db_;
};

TEST_F(StoreFormatTest, SeriesRecordAndChunk) {
  CheckExample("series");
  CheckExample("chunk-header");
  const std::string encoded = CheckExample("chunk-data");
  ASSERT_TRUE(chunk_examples_.count("chunk")) << "chunk.md has no example 'chunk'";
  EXPECT_EQ(encoded, chunk_examples_["chunk"][""]) << "the \"d\" value is chunk.md's example";
}

TEST_F(StoreFormatTest, RankedSeriesAndRankRecord) {
  CheckExample("ranked-series");
  EXPECT_EQ(CheckExample("rank"), "{}");
  // Both read back as written.
  db_.reset();
  auto opened = ChunkStore::Open(dir_.Join("store"));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::vector<SeriesKey> keys;
  ASSERT_TRUE((*opened)
                  ->ForEachSeries([&](SeriesRecord record) {
                    keys.push_back(record.key);
                    return Status::Ok();
                  })
                  .ok());
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0], kLoss);
  EXPECT_EQ(keys[1], (SeriesKey{"p", "r", "loss", 3}));
  std::vector<std::tuple<std::string, std::string, uint32_t>> ranks;
  ASSERT_TRUE(
      (*opened)
          ->runs()
          .ForEachRank([&](std::string project, std::string run, uint32_t rank, std::string json) {
            EXPECT_EQ(json, "{}");
            ranks.emplace_back(project, run, rank);
            return Status::Ok();
          })
          .ok());
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_EQ(ranks[0], std::make_tuple(std::string("p"), std::string("r"), 3u));
}

TEST_F(StoreFormatTest, RunRecordWriterAndCheckpoint) {
  EXPECT_EQ(CheckExample("run"), "{}");
  CheckExample("writer");
  CheckExample("checkpoint");
}

TEST_F(StoreFormatTest, HistogramDecodes) {
  const std::string value = CheckExample("histogram");
  Histogram h;
  ASSERT_TRUE(DecodeHistogram(examples_["histogram"]["value"], kStep, &h).ok());
  const Histogram expected = HistogramOfExample();
  EXPECT_EQ(h.time, expected.time);
  EXPECT_EQ(h.edges, expected.edges);
  EXPECT_EQ(h.counts, expected.counts);
  const std::string summary = CheckExample("histogram-summary");
  StepEntrySummary s;
  ASSERT_TRUE(DecodeStepEntrySummary(examples_["histogram-summary"]["value"], &s));
  EXPECT_EQ(s.count, 1u);
  EXPECT_EQ(s.first_step, kStep);
  EXPECT_EQ(s.last_step, kStep);
  EXPECT_EQ(s.min_time, kTime);
}

TEST_F(StoreFormatTest, ImageAndBlobDecode) {
  CheckExample("image");
  ImageEntry e;
  ASSERT_TRUE(DecodeImageEntry(examples_["image"]["value"], &e));
  const ImageEntry expected = ImageOfExample();
  EXPECT_EQ(e.time, expected.time);
  EXPECT_EQ(e.sha256, expected.sha256);
  EXPECT_EQ(e.format, expected.format);
  EXPECT_EQ(e.width, expected.width);
  EXPECT_EQ(e.height, expected.height);
  EXPECT_EQ(e.size, expected.size);
  EXPECT_EQ(e.caption, expected.caption);
  EXPECT_EQ(CheckExample("blob"), "abc");
  CheckExample("blob-references");
}

TEST_F(StoreFormatTest, TextDecodes) {
  CheckExample("text");
  TextEntry e;
  ASSERT_TRUE(DecodeTextEntry(examples_["text"]["value"], &e));
  EXPECT_EQ(e.time, kTime);
  EXPECT_EQ(e.value, "hi");
}

}  // namespace
}  // namespace trainwatch::storage
