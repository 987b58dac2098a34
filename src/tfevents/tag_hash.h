// A fast hash for tags (short strings, hashed once or twice per scalar on the import path, where
// std::hash's murmur costs more than decoding the value). Not for untrusted-key hash tables that
// must resist flooding: tags come from the user's own files.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace trainwatch::tfevents {

inline uint64_t TagHash(std::string_view s) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ s.size();
  const char* p = s.data();
  size_t n = s.size();
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
  }
  return h;
}

}  // namespace trainwatch::tfevents
