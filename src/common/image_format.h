// Image formats: which kind of encoded image some bytes are, and its size in pixels, read from the
// header alone (PNG IHDR, JPEG SOFn, GIF logical screen, WebP VP8/VP8L/VP8X). Nothing is decoded:
// the server stores and serves the bytes as they came, and needs only to know that they are an
// image a browser can show, what to call them (Content-Type) and how large they are.
//
// Untrusted input: every read is bounds-checked; bytes that are no such image, or whose header does
// not give a positive width and height, are refused with the reason.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace trainwatch {

// The values are stored in image entries (docs/format/store.md): never renumber.
enum class ImageFormat : uint8_t { kPng = 0, kJpeg = 1, kGif = 2, kWebp = 3 };

struct ImageInfo {
  ImageFormat format = ImageFormat::kPng;
  uint32_t width = 0;
  uint32_t height = 0;
};

// The Content-Type of a format ("image/png", ...).
std::string_view MimeType(ImageFormat format);

// Reads the format and dimensions of encoded image bytes. InvalidArgument, saying why, when the
// bytes are not a PNG, JPEG, GIF or WebP image or their dimensions cannot be read.
Result<ImageInfo> InspectImage(std::string_view bytes);

}  // namespace trainwatch
