#include "common/sha256.h"

#include <openssl/sha.h>

#include "common/strings.h"

namespace trainwatch {

std::string Sha256(std::string_view data) {
  std::string digest(SHA256_DIGEST_LENGTH, '\0');
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(),
         reinterpret_cast<unsigned char*>(digest.data()));
  return digest;
}

bool ParseSha256Hex(std::string_view hex, std::string* raw) {
  if (hex.size() != 2 * SHA256_DIGEST_LENGTH) return false;
  std::string out(SHA256_DIGEST_LENGTH, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = HexDigitValue(hex[2 * i]), lo = HexDigitValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  *raw = std::move(out);
  return true;
}

}  // namespace trainwatch
