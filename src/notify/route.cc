#include "notify/route.h"

#include <algorithm>

#include "common/glob.h"

namespace trainwatch::notify {

bool Route::Matches(const Notification& n) const {
  if (n.resolved() && !send_resolved) return false;
  if (SeverityOf(n) < min_severity) return false;
  if (!kinds.empty() && std::find(kinds.begin(), kinds.end(), n.kind) == kinds.end()) return false;
  if (projects.empty()) return true;
  for (const std::string& glob : projects) {
    if (GlobMatch(glob, n.project)) return true;
  }
  return false;
}

std::vector<std::string> MatchingReceivers(const std::vector<Route>& routes,
                                           const Notification& n) {
  std::vector<std::string> out;
  for (const Route& r : routes) {
    if (!r.Matches(n)) continue;
    if (std::find(out.begin(), out.end(), r.receiver) == out.end()) out.push_back(r.receiver);
  }
  return out;
}

}  // namespace trainwatch::notify
