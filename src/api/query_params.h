// Parsing numbers from query parameters: the whole text must be the number.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

namespace trainwatch::api {

inline bool ParseInt(const std::string& text, int64_t* out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// Finite numbers only.
inline bool ParseDouble(const std::string& text, double* out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size() && std::isfinite(*out);
}

}  // namespace trainwatch::api
