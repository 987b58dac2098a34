// UTF-8 validation for text that came from outside the process (JSON strings, names, rule files).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace trainwatch {

// The length of the longest prefix of `s` that is well-formed UTF-8 (no overlongs, no surrogates,
// nothing above U+10FFFF): s.size() when all of it is, else the offset of the first bad sequence.
inline size_t Utf8ValidPrefix(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    // Fast path: eight ASCII bytes at a time (names almost always are).
    if (i + 8 <= n) {
      uint64_t word;
      std::memcpy(&word, s.data() + i, 8);
      if ((word & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (i + len > n) return i;
    for (int k = 1; k < len; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return i;
    }
    i += len;
  }
  return n;
}

// True if `s` is well-formed UTF-8.
inline bool IsValidUtf8(std::string_view s) { return Utf8ValidPrefix(s) == s.size(); }

}  // namespace trainwatch
