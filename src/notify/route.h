// Route: which notifications go to which receiver.
#pragma once

#include <string>
#include <vector>

#include "notify/notification.h"

namespace trainwatch::notify {

struct Route {
  std::string receiver;               // a receiver's name
  std::vector<std::string> projects;  // globs ("vision-*"; `*` and `?`, common/glob.h); empty: every project
  std::vector<std::string> kinds;     // kinds ("rule" for user rules); empty: every kind
  Severity min_severity = Severity::kInfo;
  bool send_resolved = true;  // false: only firing notifications
  int line = 0;               // where the route was configured (1-based; 0 when built in code)

  // True when `n` passes every filter of this route.
  bool Matches(const Notification& n) const;
};

// Names of the receivers whose routes match `n`, in the order of their first matching route,
// each once.
std::vector<std::string> MatchingReceivers(const std::vector<Route>& routes, const Notification& n);

}  // namespace trainwatch::notify
