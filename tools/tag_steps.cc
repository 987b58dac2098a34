#include "tag_steps.h"

#include <algorithm>

namespace trainwatch::tools {

int64_t& TagSteps::Slot(std::string_view tag) {
  auto it = steps_.find(tag);
  if (it != steps_.end()) return it->second;
  return steps_.emplace(std::string(tag), kNone).first->second;
}

void TagSteps::RewindAll(int64_t step) {
  // Below `step`; kNone (-1) when the rewind is at 0, so that step 0 does not go back again.
  for (auto& [tag, newest] : steps_) newest = std::min(newest, step - 1);
}

}  // namespace trainwatch::tools
