#include "storage/encoding/zstd_frame.h"

#include <zstd.h>

namespace trainwatch::storage::encoding {

bool ZstdCompress(std::string_view raw, int level, std::string* out) {
  out->resize(ZSTD_compressBound(raw.size()));
  const size_t n = ZSTD_compress(out->data(), out->size(), raw.data(), raw.size(), level);
  if (ZSTD_isError(n)) {
    out->clear();
    return false;
  }
  out->resize(n);
  return true;
}

Status ZstdDecompress(std::string_view frame, size_t max_size, std::string* out) {
  const unsigned long long content = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (content == ZSTD_CONTENTSIZE_ERROR) return Status::Corruption("not a zstd frame");
  if (content == ZSTD_CONTENTSIZE_UNKNOWN) {
    return Status::Corruption("zstd frame without content size");
  }
  if (content == 0 || content > max_size) {
    return Status::Corruption("zstd content size " + std::to_string(content) + " outside [1, " +
                              std::to_string(max_size) + "]");
  }
  const size_t frame_size = ZSTD_findFrameCompressedSize(frame.data(), frame.size());
  if (ZSTD_isError(frame_size) || frame_size != frame.size()) {
    return Status::Corruption("zstd payload is not exactly one complete frame");
  }
  out->resize(content);
  const size_t n = ZSTD_decompress(out->data(), out->size(), frame.data(), frame.size());
  if (ZSTD_isError(n)) {
    return Status::Corruption(std::string("zstd: ") + ZSTD_getErrorName(n));
  }
  if (n != content) return Status::Corruption("zstd frame shorter than its content size");
  return Status::Ok();
}

bool ZstdLevelValid(int level) { return level >= ZSTD_minCLevel() && level <= ZSTD_maxCLevel(); }

}  // namespace trainwatch::storage::encoding
