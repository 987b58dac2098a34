// Parsing JSON that came from outside the process (request bodies, protobuf string fields, files
// written by other programs) into nlohmann::json. Every such parse goes through ParseJson, so that
// every parse has a nesting limit: nlohmann's parser is iterative, but dump(), copies and
// comparisons recurse, and 100,000 nested arrays in a 200 KB body overflow the stack.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "common/json.h"

namespace trainwatch {

// Deep enough for any config a person writes; far below what recursion over the tree can bear.
inline constexpr int kMaxJsonDepth = 64;
// Model graphs (module trees, GraphDefs) nest deeper than configs.
inline constexpr int kMaxGraphJsonDepth = 256;
// Answers of our own server wrap documents that were held to kMaxJsonDepth.
inline constexpr int kMaxAnswerJsonDepth = 2 * kMaxJsonDepth;

// The document in `text`, or InvalidArgument naming the byte at fault ("invalid JSON at byte 17:
// ...", "JSON nested deeper than 64 levels at byte 65").
Result<nlohmann::json> ParseJson(std::string_view text, int max_depth = kMaxJsonDepth);

// As ParseJson, for callers that only look at the shape of what they got: text that is not JSON,
// or nests too deep, comes back as a discarded value (is_discarded(); not an object, array, ...).
nlohmann::json ParseJsonOrDiscarded(std::string_view text, int max_depth = kMaxJsonDepth);

// The first byte offset at which `text` opens its (max_depth + 1)-th nested array or object, or
// npos. Strings are skipped (brackets inside them do not count); the text need not be valid JSON.
size_t JsonDepthExceededAt(std::string_view text, int max_depth);

}  // namespace trainwatch
