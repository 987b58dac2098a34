// Image headers (src/common/image_format.h): the bytes of every image a client sends (RunBatch
// images, tfevents imports) are inspected for their format and size before they are stored.
//
// Checks, besides memory safety: an image that passes has a positive width and height, starts with
// its format's signature, and has a MIME type; a refusal says why.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/image_format.h"
#include "fuzz/fuzz_support.h"

using trainwatch::ImageFormat;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto info = trainwatch::InspectImage(bytes);
  if (!info.ok()) {
    FUZZ_CHECK(!info.status().message().empty(), "a refusal without a reason");
    return 0;
  }
  FUZZ_CHECK(info->width > 0 && info->height > 0, "an image without pixels");
  FUZZ_CHECK(trainwatch::MimeType(info->format).starts_with("image/"), "no MIME type");
  switch (info->format) {
    case ImageFormat::kPng:
      FUZZ_CHECK(bytes.starts_with("\x89PNG\r\n\x1a\n"), "PNG without its signature");
      break;
    case ImageFormat::kJpeg:
      FUZZ_CHECK(bytes.starts_with("\xFF\xD8"), "JPEG without SOI");
      break;
    case ImageFormat::kGif:
      FUZZ_CHECK(bytes.starts_with("GIF87a") || bytes.starts_with("GIF89a"),
                 "GIF without its signature");
      break;
    case ImageFormat::kWebp:
      FUZZ_CHECK(bytes.starts_with("RIFF") && bytes.substr(8, 4) == "WEBP",
                 "WebP without RIFF/WEBP");
      break;
    default:
      FUZZ_CHECK(false, "unknown format");
  }
  return 0;
}
