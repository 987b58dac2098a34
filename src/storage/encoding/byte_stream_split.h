// Byte-stream split (as in Parquet's BYTE_STREAM_SPLIT): n fixed-width little-endian values are
// stored as `width` planes of n bytes, plane k holding byte k of every value. Sign/exponent bytes
// then sit together, which lets zstd compress them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace trainwatch::storage::encoding {

// Splits n values of `width` bytes each, stored contiguously at `values`, into width * n bytes.
std::string ByteStreamSplit(const void* values, size_t n, size_t width);

// Inverse of ByteStreamSplit: `planes` must hold exactly width * n bytes; writes n values to
// `values`.
void ByteStreamJoin(std::string_view planes, size_t n, size_t width, void* values);

}  // namespace trainwatch::storage::encoding
