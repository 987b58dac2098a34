// Thin wrappers over zstd for column payloads: one frame per payload, content size always recorded.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace trainwatch::storage::encoding {

// Compresses `raw` (non-empty) into a single zstd frame at `level`, replacing *out. Returns false
// if zstd fails (which it does not for valid levels and in-memory buffers).
bool ZstdCompress(std::string_view raw, int level, std::string* out);

// Decompresses `frame`, which must be exactly one zstd frame whose recorded content size is at most
// `max_size`, replacing *out. Corruption otherwise, without allocating more than `max_size` bytes.
Status ZstdDecompress(std::string_view frame, size_t max_size, std::string* out);

// True if `level` is a compression level zstd accepts.
bool ZstdLevelValid(int level);

}  // namespace trainwatch::storage::encoding
