// SHA-256 (OpenSSL), the content address of stored image bytes, and its hex form in URLs
// (written with LowerHex from common/strings.h).
#pragma once

#include <string>
#include <string_view>

namespace trainwatch {

// The 32-byte digest of `data`.
std::string Sha256(std::string_view data);
// Parses 64 hex digits (either case) into 32 raw bytes; false for anything else.
bool ParseSha256Hex(std::string_view hex, std::string* raw);

}  // namespace trainwatch
