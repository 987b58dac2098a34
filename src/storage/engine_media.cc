// Engine: images and texts, kinds of per-step entry (engine_step_entries.cc): their values encoded
// as they are applied and decoded as they are read. Image bytes go to content-addressed blobs
// whose reference counts the store keeps exact (BlobStore).
#include "common/sha256.h"
#include "storage/engine.h"

namespace trainwatch::storage {

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
    entry.time = image.time();
    entry.caption = image.caption();
    entry.sha256 = Sha256(image.data());
    entry.format = info->format;
    entry.width = info->width;
    entry.height = info->height;
    entry.size = image.data().size();
    ApplyStepEntry(StepEntryType::kImage, {batch.project(), batch.run(), image.name()},
                   image.step(), image.index(), image.time(), EncodeImageEntry(entry),
                   image.data());
  }
}

void Engine::ApplyTexts(const v1::RunBatch& batch) {
  for (const v1::Text& text : batch.texts()) {
    TextEntry entry;
    entry.time = text.time();
    entry.value = text.value();
    ApplyStepEntry(StepEntryType::kText, {batch.project(), batch.run(), text.name()}, text.step(),
                   /*index=*/0, text.time(), EncodeTextEntry(entry), /*payload=*/{});
  }
}

Status Engine::ReadImages(const std::string& project, const std::string& run,
                          const MediaReadOptions& options, std::vector<ImageEntry>* out) const {
  Status decoded;
  TW_RETURN_IF_ERROR(ScanStepEntries(
      StepEntryType::kImage, RunKey{project, run}, options.name, options.from_step, options.to_step,
      [&](const std::string& name, int64_t step, uint32_t index, std::string_view value) {
        if (out->size() >= options.limit) return false;
        ImageEntry entry;
        if (!DecodeImageEntry(value, &entry)) {
          decoded = Status::Corruption("bad image entry of " + run + "/" + name);
          return false;
        }
        entry.name = name;
        entry.step = step;
        entry.index = index;
        out->push_back(std::move(entry));
        return true;
      }));
  return decoded;
}

Status Engine::ReadTexts(const std::string& project, const std::string& run,
                         const MediaReadOptions& options, std::vector<TextEntry>* out) const {
  Status decoded;
  TW_RETURN_IF_ERROR(ScanStepEntries(
      StepEntryType::kText, RunKey{project, run}, options.name, options.from_step, options.to_step,
      [&](const std::string& name, int64_t step, uint32_t, std::string_view value) {
        if (out->size() >= options.limit) return false;
        TextEntry entry;
        if (!DecodeTextEntry(value, &entry)) {
          decoded = Status::Corruption("bad text entry of " + run + "/" + name);
          return false;
        }
        entry.name = name;
        entry.step = step;
        out->push_back(std::move(entry));
        return true;
      }));
  return decoded;
}

Result<std::string> Engine::ReadBlob(std::string_view sha256) const {
  return store_->blobs().Get(sha256);
}

Result<bool> Engine::HasBlob(std::string_view sha256) const { return store_->blobs().Has(sha256); }

BlobChange Engine::BlobTotals() const {
  MutexLock lock(entries_mu_);
  return blob_totals_;
}

Result<uint64_t> Engine::DeleteImagesOlderThan(const std::string& project, double cutoff) {
  return DeleteStepEntriesOlderThan(StepEntryType::kImage, project, cutoff);
}

Result<uint64_t> Engine::DeleteTextsOlderThan(const std::string& project, double cutoff) {
  return DeleteStepEntriesOlderThan(StepEntryType::kText, project, cutoff);
}

}  // namespace trainwatch::storage
