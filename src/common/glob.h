// Globs on project, run and alert names (rule files, silences, notification routes): `*` matches any run of characters (including none), `?` any one
// character; everything else matches itself. No character classes, no escapes.
#pragma once

#include <string_view>

namespace trainwatch {

// True if `pattern` contains `*` or `?` (otherwise it names one project exactly).
bool IsGlob(std::string_view pattern);

// True if `name` matches `pattern` as a whole. O(|pattern| * |name|) worst case, no allocation.
bool GlobMatch(std::string_view pattern, std::string_view name);

}  // namespace trainwatch
