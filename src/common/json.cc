#include "common/json.h"

#include <string>

namespace trainwatch {

size_t JsonDepthExceededAt(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped character cannot end the string
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

Result<nlohmann::json> ParseJson(std::string_view text, int max_depth) {
  if (size_t at = JsonDepthExceededAt(text, max_depth); at != std::string_view::npos) {
    return Status::InvalidArgument("JSON nested deeper than " + std::to_string(max_depth) +
                                   " levels at byte " + std::to_string(at));
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 5: ...".
    std::string what = e.what();
    size_t detail = what.find("] ");
    return Status::InvalidArgument("invalid JSON at byte " + std::to_string(e.byte) + ": " +
                                   (detail == std::string::npos ? what : what.substr(detail + 2)));
  } catch (const nlohmann::json::exception& e) {
    // out_of_range.406: a number beyond a double ("1e999").
    std::string what = e.what();
    size_t detail = what.find("] ");
    return Status::InvalidArgument("invalid JSON: " + (detail == std::string::npos ? what : what.substr(detail + 2)));
  }
}

nlohmann::json ParseJsonOrDiscarded(std::string_view text, int max_depth) {
  if (JsonDepthExceededAt(text, max_depth) != std::string_view::npos) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace trainwatch
