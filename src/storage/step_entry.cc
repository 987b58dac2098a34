#include "storage/step_entry.h"

#include <algorithm>

#include "storage/binary_io.h"
#include "storage/histogram.h"
#include "storage/media.h"

namespace trainwatch::storage {
namespace {

constexpr uint8_t kSummaryVersion = 1;

constexpr StepEntryKind kKinds[kStepEntryTypes] = {
    {StepEntryType::kHistogram, "histogram", 'h', 'H', /*indexed=*/false,
     /*holds_references=*/false, &DecodeHistogramTime},
    {StepEntryType::kImage, "image", 'i', 'I', /*indexed=*/true, /*holds_references=*/true,
     &DecodeMediaEntryTime},
    {StepEntryType::kText, "text", 't', 'T', /*indexed=*/false, /*holds_references=*/false,
     &DecodeMediaEntryTime},
};

}  // namespace

const StepEntryKind& KindOf(StepEntryType type) { return kKinds[static_cast<size_t>(type)]; }

void StepEntrySummary::Include(int64_t step, double time) {
  first_step = count == 0 ? step : std::min(first_step, step);
  last_step = count == 0 ? step : std::max(last_step, step);
  ++count;
  min_time = std::min(min_time, time);
}

std::string EncodeStepEntrySummary(const StepEntrySummary& summary) {
  std::string out(1, static_cast<char>(kSummaryVersion));
  PutFixed64(&out, summary.count);
  PutFixed64(&out, static_cast<uint64_t>(summary.first_step));
  PutFixed64(&out, static_cast<uint64_t>(summary.last_step));
  PutDouble(&out, summary.min_time);
  return out;
}

bool DecodeStepEntrySummary(std::string_view data, StepEntrySummary* summary) {
  ByteReader in(data);
  uint8_t version = 0;
  return in.GetByte(&version) && version == kSummaryVersion && in.GetFixed64(&summary->count) &&
         in.GetInt64(&summary->first_step) && in.GetInt64(&summary->last_step) &&
         in.GetDouble(&summary->min_time) && in.empty();
}

}  // namespace trainwatch::storage
