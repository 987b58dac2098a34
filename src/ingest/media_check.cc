#include "ingest/media_check.h"

#include <cmath>

#include "common/image_format.h"

namespace trainwatch::ingest {
namespace {

Status CheckStepAndTime(int64_t step, double time) {
  if (step < 0) return Status::InvalidArgument("step is negative");
  if (!std::isfinite(time) || time < 0) {
    return Status::InvalidArgument("time is not a finite, non-negative time (0 means server time)");
  }
  return Status::Ok();
}

Status CheckImage(const v1::Image& image, const IngestLimits& limits) {
  TW_RETURN_IF_ERROR(ValidateName("image tag", image.name(), limits));
  TW_RETURN_IF_ERROR(CheckStepAndTime(image.step(), image.time()));
  if (image.data().size() > limits.max_image_bytes) {
    return Status::InvalidArgument("image is " + std::to_string(image.data().size()) +
                                   " bytes; the limit is " +
                                   std::to_string(limits.max_image_bytes) + " (--max-image-bytes)");
  }
  if (image.caption().size() > limits.max_caption_bytes) {
    return Status::InvalidArgument("caption is " + std::to_string(image.caption().size()) +
                                   " bytes; the limit is " +
                                   std::to_string(limits.max_caption_bytes));
  }
  return InspectImage(image.data()).status();
}

Status CheckText(const v1::Text& text, const IngestLimits& limits) {
  TW_RETURN_IF_ERROR(ValidateName("text tag", text.name(), limits));
  TW_RETURN_IF_ERROR(CheckStepAndTime(text.step(), text.time()));
  if (text.value().size() > limits.max_text_bytes) {
    return Status::InvalidArgument("text is " + std::to_string(text.value().size()) +
                                   " bytes; the limit is " + std::to_string(limits.max_text_bytes));
  }
  return Status::Ok();
}

// A tag as quoted in an error: at most `max` bytes (a too-long tag is one of the errors), cut
// before a UTF-8 continuation byte so that the message stays valid UTF-8 (protobuf parsing has
// checked the whole tag).
std::string ClipUtf8(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return s.substr(0, end) + "...";
}

// Keeps the entries of `items` that `check` accepts, in order; reports the others.
template <typename Item, typename Check, typename Describe>
void Filter(google::protobuf::RepeatedPtrField<Item>* items, Check check, Describe describe,
            double now, std::vector<LineError>* errors) {
  int kept = 0;
  for (int i = 0; i < items->size(); ++i) {
    Status s = check((*items)[i]);
    if (!s.ok()) {
      errors->push_back({0, describe(i, (*items)[i]) + ": " + s.message()});
      continue;
    }
    if ((*items)[i].time() == 0) (*items)[i].set_time(now);
    if (kept != i) items->SwapElements(kept, i);
    ++kept;
  }
  items->DeleteSubrange(kept, items->size() - kept);
}

}  // namespace

bool CheckMedia(v1::RunBatch* batch, int batch_index, const IngestLimits& limits, double now,
                std::vector<LineError>* errors) {
  const size_t errors_before = errors->size();
  // Error texts are built only for what is refused.
  auto where = [&] {
    return "runs[" + std::to_string(batch_index) + "] (run '" + batch->run() + "')";
  };
  auto tag = [&](const std::string& name) {
    return "'" + ClipUtf8(name, limits.max_name_bytes) + "'";
  };
  Filter(
      batch->mutable_images(), [&](const v1::Image& image) { return CheckImage(image, limits); },
      [&](int i, const v1::Image& image) {
        return where() + ": images[" + std::to_string(i) + "] (tag " + tag(image.name()) +
               ", step " + std::to_string(image.step()) + ", index " +
               std::to_string(image.index()) + ")";
      },
      now, errors);
  Filter(
      batch->mutable_texts(), [&](const v1::Text& text) { return CheckText(text, limits); },
      [&](int i, const v1::Text& text) {
        return where() + ": texts[" + std::to_string(i) + "] (tag " + tag(text.name()) + ", step " +
               std::to_string(text.step()) + ")";
      },
      now, errors);
  return errors->size() > errors_before && batch->steps_size() == 0 && batch->metrics_size() == 0 &&
         !batch->has_metadata() && batch->histograms_size() == 0 && !batch->has_heartbeat() &&
         batch->images_size() == 0 && batch->texts_size() == 0;
}

}  // namespace trainwatch::ingest
