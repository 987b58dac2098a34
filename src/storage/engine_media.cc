// Engine: images and texts — stored straight into the store as they are applied (one entry per tag,
// step and, for images, index), indexed in memory by their "I"/"T" summaries, read by step range,
// deleted with their run or by age. Image bytes go to content-addressed blobs whose reference
// counts the store keeps exact (ChunkStore::PutImage).
#include <algorithm>
#include <limits>

#include "storage/engine.h"
#include "storage/sha256.h"

namespace trainwatch::storage {
namespace {

void Add(BlobChange* total, const BlobChange& change) {
  total->blobs += change.blobs;
  total->bytes += change.bytes;
}

}  // namespace

void Engine::EnsureLoadedRun(const RunKey& key) {
  auto& run = runs_[key];
  if (run) return;
  // Entries persisted before their run record: rebuild a minimal one.
  run = std::make_unique<Run>();
  run->info.project = key.project;
  run->info.id = key.run;
  run->info.name = key.run;
}

Status Engine::LoadMedia() {
  std::lock_guard lock(media_mu_);
  TW_RETURN_IF_ERROR(store_->ForEachImageTag([&](SeriesKey tag, TagSummary info) {
    EnsureLoadedRun(tag.run_key());
    images_[tag.run_key()][tag.metric] = info;
    return Status::Ok();
  }));
  TW_RETURN_IF_ERROR(store_->ForEachTextTag([&](SeriesKey tag, TagSummary info) {
    EnsureLoadedRun(tag.run_key());
    texts_[tag.run_key()][tag.metric] = info;
    return Status::Ok();
  }));
  TW_ASSIGN_OR_RETURN(blob_totals_, store_->CountBlobs());
  return Status::Ok();
}

void Engine::ApplyImages(const v1::RunBatch& batch) {
  for (const v1::Image& image : batch.images()) {
    // Checked before logging; the format and size are read again rather than carried in the log.
    Result<ImageInfo> info = InspectImage(image.data());
    if (!info.ok()) {
      logger_.Error("skipping an unreadable image", {{"run", batch.run()},
                                                     {"tag", image.name()},
                                                     {"step", image.step()},
                                                     {"error", info.status().ToString()}});
      continue;
    }
    ImageEntry entry;
    entry.step = image.step();
    entry.index = image.index();
    entry.time = image.time();
    entry.caption = image.caption();
    entry.sha256 = Sha256(image.data());
    entry.format = info->format;
    entry.width = info->width;
    entry.height = info->height;
    entry.size = image.data().size();
    const SeriesKey tag{batch.project(), batch.run(), image.name()};
    std::lock_guard lock(media_mu_);
    BlobChange change;
    Result<TagSummary> summary = store_->PutImage(tag, entry, image.data(), &change);
    if (!summary.ok()) {
      logger_.Error("persisting image", {{"error", summary.status().ToString()}});
      continue;
    }
    images_[tag.run_key()][tag.metric] = *summary;
    Add(&blob_totals_, change);
  }
}

void Engine::ApplyTexts(const v1::RunBatch& batch) {
  for (const v1::Text& text : batch.texts()) {
    const SeriesKey tag{batch.project(), batch.run(), text.name()};
    TextEntry entry;
    entry.step = text.step();
    entry.time = text.time();
    entry.value = text.value();
    std::lock_guard lock(media_mu_);
    Result<TagSummary> summary = store_->PutText(tag, entry);
    if (!summary.ok()) {
      logger_.Error("persisting text", {{"error", summary.status().ToString()}});
      continue;
    }
    texts_[tag.run_key()][tag.metric] = *summary;
  }
}

std::vector<std::string> Engine::MediaTags(const TagIndex& index, const RunKey& run,
                                           const std::string& name) const {
  std::vector<std::string> tags;
  auto it = index.find(run);
  if (it == index.end()) return tags;
  for (const auto& [tag, summary] : it->second) {
    if (name.empty() || tag == name) tags.push_back(tag);
  }
  return tags;
}

Status Engine::CheckRunExists(const std::string& project, const std::string& run) const {
  std::shared_lock lock(runs_mu_);
  if (runs_.find(RunKey{project, run}) == runs_.end()) {
    return Status::NotFound("no run '" + run + "' in project '" + project + "'");
  }
  return Status::Ok();
}

Status Engine::ReadImages(const std::string& project, const std::string& run,
                          const MediaReadOptions& options, std::vector<ImageEntry>* out) const {
  TW_RETURN_IF_ERROR(CheckRunExists(project, run));
  std::vector<std::string> tags;
  {
    std::lock_guard lock(media_mu_);
    tags = MediaTags(images_, RunKey{project, run}, options.name);
  }
  for (const std::string& tag : tags) {
    if (out->size() >= options.limit) break;
    TW_RETURN_IF_ERROR(store_->ScanImages({project, run, tag}, options.from_step, options.to_step,
                                          [&](ImageEntry entry) {
                                            if (out->size() >= options.limit) return false;
                                            out->push_back(std::move(entry));
                                            return true;
                                          }));
  }
  return Status::Ok();
}

Status Engine::ReadTexts(const std::string& project, const std::string& run,
                         const MediaReadOptions& options, std::vector<TextEntry>* out) const {
  TW_RETURN_IF_ERROR(CheckRunExists(project, run));
  std::vector<std::string> tags;
  {
    std::lock_guard lock(media_mu_);
    tags = MediaTags(texts_, RunKey{project, run}, options.name);
  }
  for (const std::string& tag : tags) {
    if (out->size() >= options.limit) break;
    TW_RETURN_IF_ERROR(store_->ScanTexts({project, run, tag}, options.from_step, options.to_step,
                                         [&](TextEntry entry) {
                                           if (out->size() >= options.limit) return false;
                                           out->push_back(std::move(entry));
                                           return true;
                                         }));
  }
  return Status::Ok();
}

Result<std::string> Engine::ReadBlob(std::string_view sha256) const {
  return store_->GetBlob(sha256);
}

BlobChange Engine::BlobTotals() const {
  std::lock_guard lock(media_mu_);
  return blob_totals_;
}

void Engine::ListMedia(const RunKey& run, std::vector<MetricInfo>* out) const {
  std::lock_guard lock(media_mu_);
  for (auto [index, kind] : {std::pair{&images_, "image"}, std::pair{&texts_, "text"}}) {
    auto it = index->find(run);
    if (it == index->end()) continue;
    for (const auto& [name, summary] : it->second) {
      MetricInfo info;
      info.name = name;
      info.kind = kind;
      info.count = summary.count;
      info.first_step = summary.first_step;
      info.last_step = summary.last_step;
      out->push_back(std::move(info));
    }
  }
}

Status Engine::DeleteRunMedia(const RunKey& run) {
  std::lock_guard lock(media_mu_);
  auto images = images_.find(run);
  if (images != images_.end()) {
    // Tag by tag, each one atomic batch: a crash in between leaves whole tags, and exact counts.
    for (auto it = images->second.begin(); it != images->second.end();) {
      TagSummary kept;
      BlobChange change;
      Result<uint64_t> deleted =
          store_->DeleteImagesOlderThan({run.project, run.run, it->first},
                                        std::numeric_limits<double>::infinity(), &kept, &change);
      if (!deleted.ok()) {
        return deleted.status().WithContext("deleting images of tag '" + it->first + "'");
      }
      Add(&blob_totals_, change);
      it = images->second.erase(it);
    }
    images_.erase(images);
  }
  texts_.erase(run);  // the store deletes them by range with the run (ChunkStore::DeleteRun)
  return Status::Ok();
}

Result<uint64_t> Engine::DeleteMediaOlderThan(bool images, const std::string& project,
                                              double cutoff) {
  uint64_t deleted = 0;
  // Held throughout: the applier must not change a summary between the scan and the delete.
  std::lock_guard lock(media_mu_);
  TagIndex& index = images ? images_ : texts_;
  for (auto run = index.lower_bound(RunKey{project, ""});
       run != index.end() && run->first.project == project;) {
    auto& tags = run->second;
    for (auto it = tags.begin(); it != tags.end();) {
      if (!(it->second.min_time < cutoff)) {
        ++it;
        continue;
      }
      const SeriesKey tag{project, run->first.run, it->first};
      TagSummary kept;
      BlobChange change;
      Result<uint64_t> n = images ? store_->DeleteImagesOlderThan(tag, cutoff, &kept, &change)
                                  : store_->DeleteTextsOlderThan(tag, cutoff, &kept);
      if (!n.ok()) {
        return n.status().WithContext("tag '" + tag.metric + "' of run '" + tag.run + "'");
      }
      Add(&blob_totals_, change);
      deleted += *n;
      if (kept.count == 0) {
        it = tags.erase(it);
      } else {
        it->second = kept;
        ++it;
      }
    }
    run = tags.empty() ? index.erase(run) : std::next(run);
  }
  return deleted;
}

Result<uint64_t> Engine::DeleteImagesOlderThan(const std::string& project, double cutoff) {
  return DeleteMediaOlderThan(/*images=*/true, project, cutoff);
}

Result<uint64_t> Engine::DeleteTextsOlderThan(const std::string& project, double cutoff) {
  return DeleteMediaOlderThan(/*images=*/false, project, cutoff);
}

}  // namespace trainwatch::storage
