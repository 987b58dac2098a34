// The newest step sent for each scalar tag of one run: what TensorBoard's per-tag purge compares a
// new value's step with (docs/tensorboard.md#steps-that-go-backwards).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "tfevents/tag_hash.h"

namespace trainwatch::tools {

// When a tag's step goes backwards (a value at step S after one at a step > S: a re-run of the same
// trial written into the same run directory, a restart from a checkpoint without a SessionLog),
// TensorBoard evicts every value of that tag at S and later before taking the new one, whatever its
// value. A value at the newest step itself replaces the one there, which the server's resume rule
// already does. Not thread-safe.
class TagSteps {
 public:
  // The slot holding `tag`'s newest step, created (kNone) on first use. The reference stays valid
  // until the TagSteps is destroyed (node-based map).
  int64_t& Slot(std::string_view tag);
  // Whether a value of `tag` at `step` makes TensorBoard purge: the tag was sent at a later step.
  static bool GoesBack(int64_t newest, int64_t step) { return newest != kNone && step < newest; }
  // A run rewind at `step` (SessionLog START): nothing of any tag at `step` or later is visible.
  void RewindAll(int64_t step);

  void Set(std::string_view tag, int64_t step) { Slot(tag) = step; }
  // Every tag that was sent, with its newest step (to persist: the watch state).
  const auto& all() const { return steps_; }

  static constexpr int64_t kNone = -1;  // steps are >= 0

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return tfevents::TagHash(s); }
  };
  std::unordered_map<std::string, int64_t, Hash, std::equal_to<>> steps_;
};

}  // namespace trainwatch::tools
