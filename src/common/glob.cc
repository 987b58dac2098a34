#include "common/glob.h"

namespace trainwatch {

bool IsGlob(std::string_view pattern) {
  return pattern.find_first_of("*?") != std::string_view::npos;
}

bool GlobMatch(std::string_view pattern, std::string_view name) {
  // Greedy matching with one backtrack point: the most recent `*`.
  size_t p = 0, n = 0;
  size_t star = std::string_view::npos, star_n = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_n = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++star_n;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace trainwatch
