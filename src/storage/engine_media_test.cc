// The engine's images and texts: content-addressed blobs stored once, replacing by place, deletion
// with blob collection (run deletion and retention), and recovery after a crash — replayed log
// records must not count a blob's references twice.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <limits>

#include "common/sha256.h"
#include "common/testing/image_test_util.h"
#include "common/testing/temp_dir.h"
#include "storage/engine.h"
#include "storage/engine_test_util.h"

namespace trainwatch::storage {
namespace {

using namespace test_images;

constexpr double kT0 = 1767225600.0;

struct ImageSpec {
  std::string tag;
  int64_t step;
  uint32_t index;
  std::string bytes;
  double time = kT0;
  std::string caption = {};
};

class MediaTest : public ::testing::Test {
 protected:
  void Open() {
    engine_.reset();
    auto engine = OpenTestEngine(dir_.path(), EngineOptions{}, clock_, logger_, metrics_);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
  }

  void Write(v1::WriteRequest request) { WriteAndWait(*engine_, std::move(request)); }

  void WriteImages(const std::string& run, const std::vector<ImageSpec>& images) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project("p");
    batch->set_run(run);
    for (const ImageSpec& spec : images) {
      v1::Image* image = batch->add_images();
      image->set_name(spec.tag);
      image->set_step(spec.step);
      image->set_index(spec.index);
      image->set_time(spec.time);
      image->set_data(spec.bytes);
      image->set_caption(spec.caption);
    }
    Write(std::move(request));
  }

  void WriteText(const std::string& run, const std::string& tag, int64_t step,
                 const std::string& value, double time = kT0) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project("p");
    batch->set_run(run);
    v1::Text* text = batch->add_texts();
    text->set_name(tag);
    text->set_step(step);
    text->set_time(time);
    text->set_value(value);
    Write(std::move(request));
  }

  std::vector<ImageEntry> Images(const std::string& run, MediaReadOptions options = {}) {
    std::vector<ImageEntry> out;
    Status s = engine_->ReadImages("p", run, options, &out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  std::vector<TextEntry> Texts(const std::string& run, MediaReadOptions options = {}) {
    std::vector<TextEntry> out;
    Status s = engine_->ReadTexts("p", run, options, &out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  bool BlobStored(const std::string& bytes) {
    Result<std::string> blob = engine_->ReadBlob(Sha256(bytes));
    if (blob.ok()) {
      EXPECT_EQ(*blob, bytes);
    } else {
      EXPECT_EQ(blob.status().code(), StatusCode::kNotFound);
    }
    return blob.ok();
  }

  test::TempDir dir_;
  ManualClock clock_;
  Logger logger_{LogLevel::kError};
  MetricsRegistry metrics_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(MediaTest, SameBytesAreStoredOnceAndComeBackExactly) {
  Open();
  const std::string png = Png(48, 32), gif = Gif(5, 6);
  for (const std::string run : {"a", "b"}) {
    for (int step = 0; step < 100; step += 10) {
      std::vector<ImageSpec> batch;
      for (int s = step; s < step + 10; ++s)
        batch.push_back({"samples", s, 0, png, kT0 + s, "step " + std::to_string(s)});
      batch.push_back({"other", step, 3, gif});
      WriteImages(run, batch);
    }
  }
  for (int pass = 0; pass < 2; ++pass) {
    EXPECT_EQ(engine_->BlobTotals().blobs, 2);
    EXPECT_EQ(engine_->BlobTotals().bytes, static_cast<int64_t>(png.size() + gif.size()));
    EXPECT_TRUE(BlobStored(png));
    EXPECT_TRUE(BlobStored(gif));
    std::vector<ImageEntry> images = Images("b");
    ASSERT_EQ(images.size(), 110u);
    // By name, then step: "other" first.
    EXPECT_EQ(images[0].name, "other");
    EXPECT_EQ(images[0].index, 3u);
    EXPECT_EQ(images[0].format, ImageFormat::kGif);
    EXPECT_EQ(images[10].name, "samples");
    for (int s = 0; s < 100; ++s) {
      const ImageEntry& e = images[10 + s];
      EXPECT_EQ(e.step, s);
      EXPECT_EQ(e.time, kT0 + s);
      EXPECT_EQ(e.caption, "step " + std::to_string(s));
      EXPECT_EQ(e.sha256, Sha256(png));
      EXPECT_EQ(e.format, ImageFormat::kPng);
      EXPECT_EQ(e.width, 48u);
      EXPECT_EQ(e.height, 32u);
      EXPECT_EQ(e.size, png.size());
    }
    MediaReadOptions range;
    range.name = "samples";
    range.from_step = 40;
    range.to_step = 49;
    range.limit = 4;
    images = Images("a", range);
    ASSERT_EQ(images.size(), 4u);
    EXPECT_EQ(images[0].step, 40);
    EXPECT_EQ(images[3].step, 43);
    range.name = "no such tag";
    EXPECT_TRUE(Images("a", range).empty());
    auto metrics = engine_->ListMetrics("p", "a");
    ASSERT_EQ(metrics.size(), 2u);
    EXPECT_EQ(metrics[1].name, "samples");
    EXPECT_EQ(metrics[1].kind, "image");
    EXPECT_EQ(metrics[1].count, 100u);
    EXPECT_EQ(metrics[1].first_step, 0);
    EXPECT_EQ(metrics[1].last_step, 99);
    Open();  // from the store: the index, the counts and the totals
  }
  std::vector<ImageEntry> out;
  EXPECT_EQ(engine_->ReadImages("p", "nope", {}, &out).code(), StatusCode::kNotFound);
}

TEST_F(MediaTest, ReplacingAnImageReleasesTheBlobItReferredTo) {
  Open();
  const std::string first = Png(4, 4, 8, 2, 1), second = Png(4, 4, 8, 2, 2),
                    shared = Png(4, 4, 8, 2, 3);
  WriteImages("r", {{"t", 5, 0, first}, {"t", 5, 1, shared}, {"u", 1, 0, shared}});
  WriteImages("r", {{"t", 5, 0, second, kT0 + 1, "new"}});  // replaces (t, 5, 0)
  WriteImages("r", {{"t", 5, 1, shared}});                  // the same again: nothing changes
  WriteImages("r", {{"u", 1, 0, second}});                  // shared loses one of two references
  for (int pass = 0; pass < 2; ++pass) {
    EXPECT_FALSE(BlobStored(first)) << "no entry refers to it any more";
    EXPECT_TRUE(BlobStored(second));
    EXPECT_TRUE(BlobStored(shared));
    EXPECT_EQ(engine_->BlobTotals().blobs, 2);
    std::vector<ImageEntry> images = Images("r");
    ASSERT_EQ(images.size(), 3u);
    EXPECT_EQ(images[0].sha256, Sha256(second));
    EXPECT_EQ(images[0].caption, "new");
    EXPECT_EQ(images[1].sha256, Sha256(shared));
    EXPECT_EQ(images[2].sha256, Sha256(second));
    auto metrics = engine_->ListMetrics("p", "r");
    ASSERT_EQ(metrics.size(), 2u);
    EXPECT_EQ(metrics[0].count, 2u) << "a replaced image is not counted twice";
    Open();
  }
}

TEST_F(MediaTest, DeletingARunFreesItsBlobsAndKeepsSharedOnes) {
  Open();
  const std::string shared = Png(8, 8, 8, 2, 1), only_a = Png(8, 8, 8, 2, 2),
                    only_b = Png(8, 8, 8, 2, 3);
  WriteImages("a", {{"x", 0, 0, shared}, {"x", 1, 0, only_a}, {"y", 0, 0, only_a}});
  WriteImages("b", {{"x", 0, 0, shared}, {"x", 1, 0, only_b}});
  WriteText("a", "notes", 0, "hello");
  ASSERT_TRUE(engine_->DeleteRun("p", "a").ok());
  for (int pass = 0; pass < 2; ++pass) {
    EXPECT_TRUE(BlobStored(shared));
    EXPECT_FALSE(BlobStored(only_a));
    EXPECT_TRUE(BlobStored(only_b));
    EXPECT_EQ(engine_->BlobTotals().blobs, 2);
    EXPECT_EQ(Images("b").size(), 2u);
    std::vector<ImageEntry> out;
    EXPECT_EQ(engine_->ReadImages("p", "a", {}, &out).code(), StatusCode::kNotFound);
    Open();
  }
  ASSERT_TRUE(engine_->DeleteRun("p", "b").ok());
  EXPECT_EQ(engine_->BlobTotals().blobs, 0);
  EXPECT_EQ(engine_->BlobTotals().bytes, 0);
  EXPECT_FALSE(BlobStored(shared));
  // A new run of the same name starts empty, also after a restart.
  WriteText("a", "other", 3, "again");
  Open();
  std::vector<TextEntry> texts = Texts("a");
  ASSERT_EQ(texts.size(), 1u);
  EXPECT_EQ(texts[0].name, "other");
  EXPECT_TRUE(Images("a").empty());
}

TEST_F(MediaTest, TextsRoundTripReplaceByStepAndReadByRange) {
  Open();
  const std::string unicode = "# Epoch 3\n\n| a | b |\n|---|---|\n| ∑ | \xF0\x9F\x98\x80 |\n";
  std::string with_nul("a\0b", 3);
  WriteText("r", "notes", 3, unicode, kT0 + 3);
  WriteText("r", "notes", 1, with_nul, kT0 + 1);
  WriteText("r", "notes", 7, "old", kT0 + 7);
  WriteText("r", "notes", 7, "new", kT0 + 8);
  WriteText("r", "config", 0, "", kT0);
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<TextEntry> texts = Texts("r");
    ASSERT_EQ(texts.size(), 4u);
    EXPECT_EQ(texts[0].name, "config");
    EXPECT_EQ(texts[0].value, "");
    EXPECT_EQ(texts[1].step, 1);
    EXPECT_EQ(texts[1].value, with_nul);
    EXPECT_EQ(texts[2].value, unicode);
    EXPECT_EQ(texts[2].time, kT0 + 3);
    EXPECT_EQ(texts[3].value, "new");
    EXPECT_EQ(texts[3].time, kT0 + 8);
    MediaReadOptions range;
    range.from_step = 2;
    range.to_step = 6;
    texts = Texts("r", range);
    ASSERT_EQ(texts.size(), 1u);
    EXPECT_EQ(texts[0].step, 3);
    auto metrics = engine_->ListMetrics("p", "r");
    ASSERT_EQ(metrics.size(), 2u);
    EXPECT_EQ(metrics[1].kind, "text");
    EXPECT_EQ(metrics[1].count, 3u);
    EXPECT_EQ(metrics[1].first_step, 1);
    EXPECT_EQ(metrics[1].last_step, 7);
    Open();
  }
}

TEST_F(MediaTest, RetentionDeletesOldImagesAndTextsAndTheirUnsharedBlobs) {
  Open();
  const std::string old_only = Png(2, 2, 8, 2, 1), both = Png(2, 2, 8, 2, 2);
  WriteImages("r", {{"x", 0, 0, old_only, 1000}, {"x", 1, 0, both, 1000}, {"x", 2, 0, both, 3000}});
  WriteText("r", "t", 0, "old", 1000);
  WriteText("r", "t", 1, "new", 3000);
  WriteText("r", "gone", 0, "old", 1000);
  EXPECT_EQ(*engine_->DeleteImagesOlderThan("p", 2000), 2u);
  EXPECT_EQ(*engine_->DeleteTextsOlderThan("p", 2000), 2u);
  EXPECT_EQ(*engine_->DeleteImagesOlderThan("elsewhere", 1e12), 0u);
  for (int pass = 0; pass < 2; ++pass) {
    EXPECT_FALSE(BlobStored(old_only));
    EXPECT_TRUE(BlobStored(both));
    std::vector<ImageEntry> images = Images("r");
    ASSERT_EQ(images.size(), 1u);
    EXPECT_EQ(images[0].step, 2);
    std::vector<TextEntry> texts = Texts("r");
    ASSERT_EQ(texts.size(), 1u);
    EXPECT_EQ(texts[0].value, "new");
    auto metrics = engine_->ListMetrics("p", "r");
    ASSERT_EQ(metrics.size(), 2u) << "'gone' had only old texts";
    EXPECT_EQ(metrics[0].kind, "text");
    EXPECT_EQ(metrics[0].first_step, 1);
    EXPECT_EQ(metrics[1].kind, "image");
    EXPECT_EQ(metrics[1].count, 1u);
    EXPECT_EQ(metrics[1].first_step, 2);
    Open();
  }
}

TEST_F(MediaTest, AnUnreadableImageInTheLogIsSkippedAndTheRestApplied) {
  Open();
  // The ingestor refuses such bytes; the engine still never trusts a log record blindly.
  WriteImages("r", {{"x", 0, 0, "not an image"}, {"x", 1, 0, Png(3, 3)}});
  std::vector<ImageEntry> images = Images("r");
  ASSERT_EQ(images.size(), 1u);
  EXPECT_EQ(images[0].step, 1);
  EXPECT_EQ(engine_->BlobTotals().blobs, 1);
}

// Crashes: a child process writes (acknowledged = in the log) and dies without closing, so no
// checkpoint covers its writes; the store keeps what it had written (a process crash) or, in the
// harsher case, loses everything since the last checkpoint (a power cut that took all of RocksDB's
// unsynced writes). Reopening replays the log over that store; the references must come out exact:
// deleting every run afterwards leaves no blob behind.
class MediaCrashTest : public MediaTest, public ::testing::WithParamInterface<bool> {};

TEST_P(MediaCrashTest, ReplayAfterACrashRestoresImagesAndExactReferenceCounts) {
  const bool store_loses_unsynced = GetParam();
  const std::string a = Png(6, 6, 8, 2, 1), b = Png(6, 6, 8, 2, 2), c = Png(6, 6, 8, 2, 3);
  Open();
  WriteImages("r1", {{"x", 0, 0, a}});  // checkpointed below: in the store for good
  ASSERT_TRUE(engine_->Checkpoint().ok());
  engine_.reset();
  const std::string store = dir_.path() + "/store", snapshot = dir_.path() + "/store-at-checkpoint";
  std::filesystem::copy(store, snapshot, std::filesystem::copy_options::recursive);

  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Open();
    WriteImages("r1", {{"x", 1, 0, a}, {"x", 2, 0, b}, {"y", 0, 0, c}});
    WriteImages("r1", {{"x", 2, 0, a}});  // replaces b: b's only reference goes
    WriteImages("r2", {{"x", 0, 0, a}, {"x", 1, 0, b}});
    WriteText("r2", "notes", 4, "written before the crash");
    _exit(::testing::Test::HasFailure() ? 1 : 0);  // no Close, no checkpoint
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (store_loses_unsynced) {
    std::filesystem::remove_all(store);
    std::filesystem::rename(snapshot, store);
  }

  Open();
  std::vector<ImageEntry> r1 = Images("r1"), r2 = Images("r2");
  ASSERT_EQ(r1.size(), 4u);
  EXPECT_EQ(r1[2].step, 2);
  EXPECT_EQ(r1[2].sha256, Sha256(a));
  EXPECT_EQ(r1[3].sha256, Sha256(c));
  ASSERT_EQ(r2.size(), 2u);
  ASSERT_EQ(Texts("r2").size(), 1u);
  EXPECT_EQ(Texts("r2")[0].value, "written before the crash");
  EXPECT_TRUE(BlobStored(a));
  EXPECT_TRUE(BlobStored(b));
  EXPECT_TRUE(BlobStored(c));
  EXPECT_EQ(engine_->BlobTotals().blobs, 3);
  ASSERT_TRUE(engine_->DeleteRun("p", "r1").ok());
  EXPECT_FALSE(BlobStored(c));
  EXPECT_TRUE(BlobStored(a)) << "r2 still refers to it";
  ASSERT_TRUE(engine_->DeleteRun("p", "r2").ok());
  EXPECT_EQ(engine_->BlobTotals().blobs, 0);
  EXPECT_FALSE(BlobStored(a));
  EXPECT_FALSE(BlobStored(b));
  Open();
  EXPECT_EQ(engine_->BlobTotals().blobs, 0);
}

INSTANTIATE_TEST_SUITE_P(StoreState, MediaCrashTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "StoreLostUnsyncedWrites" : "StoreKeptItsWrites";
                         });

}  // namespace
}  // namespace trainwatch::storage
