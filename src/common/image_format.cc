#include "common/image_format.h"

#include <zlib.h>

#include <cstdio>
#include <string>

namespace trainwatch {
namespace {

uint8_t At(std::string_view b, size_t i) { return static_cast<uint8_t>(b[i]); }
uint32_t Be16(std::string_view b, size_t i) { return (uint32_t{At(b, i)} << 8) | At(b, i + 1); }
uint32_t Be32(std::string_view b, size_t i) { return (Be16(b, i) << 16) | Be16(b, i + 2); }
uint32_t Le16(std::string_view b, size_t i) { return At(b, i) | (uint32_t{At(b, i + 1)} << 8); }
uint32_t Le24(std::string_view b, size_t i) { return Le16(b, i) | (uint32_t{At(b, i + 2)} << 16); }
uint32_t Le32(std::string_view b, size_t i) { return Le16(b, i) | (Le16(b, i + 2) << 16); }

Status Bad(std::string_view format, const std::string& why) {
  return Status::InvalidArgument(std::string(format) + " image: " + why);
}

std::string_view FormatName(ImageFormat format) {
  switch (format) {
    case ImageFormat::kPng:
      return "PNG";
    case ImageFormat::kJpeg:
      return "JPEG";
    case ImageFormat::kGif:
      return "GIF";
    case ImageFormat::kWebp:
      return "WebP";
  }
  return "image";
}

std::string Hex(uint8_t byte) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", byte);
  return hex;
}

Result<ImageInfo> Dimensions(ImageFormat format, uint32_t width, uint32_t height) {
  if (width == 0 || height == 0) {
    return Bad(FormatName(format), "header gives a size of " + std::to_string(width) + "x" +
                                       std::to_string(height) + " pixels");
  }
  return ImageInfo{format, width, height};
}

// PNG: the 8-byte signature, then the IHDR chunk (it must come first): width, height, bit depth and
// colour type, checked against the chunk's CRC.
Result<ImageInfo> InspectPng(std::string_view b) {
  constexpr size_t kIhdrEnd = 8 + 8 + 13 + 4;  // signature, length + type, data, CRC
  if (b.size() < kIhdrEnd) return Bad("PNG", "truncated before the end of the IHDR chunk");
  if (Be32(b, 8) != 13 || b.substr(12, 4) != "IHDR") {
    return Bad("PNG", "the first chunk is not a 13-byte IHDR");
  }
  const auto* type_and_data = reinterpret_cast<const Bytef*>(b.data() + 12);
  if (crc32(0, type_and_data, 4 + 13) != Be32(b, 29)) return Bad("PNG", "IHDR checksum mismatch");
  const uint32_t width = Be32(b, 16), height = Be32(b, 20);
  if (width > 0x7FFFFFFF || height > 0x7FFFFFFF) {
    return Bad("PNG", "width or height beyond 2^31 - 1");
  }
  const uint8_t depth = At(b, 24), colour = At(b, 25);
  bool valid;
  switch (colour) {
    case 0:
      valid = depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16;
      break;
    case 3:
      valid = depth == 1 || depth == 2 || depth == 4 || depth == 8;
      break;
    case 2:
    case 4:
    case 6:
      valid = depth == 8 || depth == 16;
      break;
    default:
      valid = false;
  }
  if (!valid) {
    return Bad("PNG", "bit depth " + std::to_string(depth) + " with colour type " +
                          std::to_string(colour) + " is not a valid combination");
  }
  return Dimensions(ImageFormat::kPng, width, height);
}

// JPEG: markers from SOI on, skipping each segment by its length, up to the first frame header
// (SOF0-SOF15 but DHT, JPG and DAC), which holds the size. A scan before any frame header is
// malformed.
Result<ImageInfo> InspectJpeg(std::string_view b) {
  size_t pos = 2;
  for (;;) {
    if (pos >= b.size() || At(b, pos) != 0xFF) {
      return Bad("JPEG",
                 "expected a marker at offset " + std::to_string(pos) + " before any frame header");
    }
    while (pos < b.size() && At(b, pos) == 0xFF) ++pos;  // fill bytes
    if (pos >= b.size()) return Bad("JPEG", "truncated before a frame header");
    const uint8_t marker = At(b, pos++);
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;  // no payload
    if (marker == 0xD8 || marker == 0xD9 || marker == 0xDA || marker == 0x00) {
      return Bad("JPEG", "no frame header before marker " + Hex(marker) + " at offset " +
                             std::to_string(pos - 1));
    }
    if (pos + 2 > b.size()) {
      return Bad("JPEG", "truncated segment length at offset " + std::to_string(pos));
    }
    const uint32_t length = Be16(b, pos);
    if (length < 2 || pos + length > b.size()) {
      return Bad("JPEG", "segment at offset " + std::to_string(pos) + " runs past the end");
    }
    const bool frame =
        marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (frame) {
      if (length < 8) return Bad("JPEG", "frame header too short");
      return Dimensions(ImageFormat::kJpeg, Be16(b, pos + 5), Be16(b, pos + 3));
    }
    pos += length;
  }
}

Result<ImageInfo> InspectGif(std::string_view b) {
  if (b.size() < 10) return Bad("GIF", "truncated before the logical screen size");
  return Dimensions(ImageFormat::kGif, Le16(b, 6), Le16(b, 8));
}

// WebP: a RIFF container whose first chunk is VP8 (lossy: the key frame header), VP8L (lossless:
// 14-bit sizes) or VP8X (extended: the canvas size).
Result<ImageInfo> InspectWebp(std::string_view b) {
  if (b.size() < 20) return Bad("WebP", "truncated before the first chunk");
  const uint64_t riff_size = Le32(b, 4);
  if (riff_size + 8 > b.size()) {
    return Bad("WebP", "RIFF header says " + std::to_string(riff_size + 8) + " bytes; " +
                           std::to_string(b.size()) + " were sent");
  }
  const std::string_view chunk = b.substr(12, 4);
  if (chunk == "VP8 ") {
    if (b.size() < 30) return Bad("WebP", "truncated VP8 frame header");
    if ((At(b, 20) & 1) != 0 || At(b, 23) != 0x9D || At(b, 24) != 0x01 || At(b, 25) != 0x2A) {
      return Bad("WebP", "VP8 chunk does not start with a key frame");
    }
    return Dimensions(ImageFormat::kWebp, Le16(b, 26) & 0x3FFF, Le16(b, 28) & 0x3FFF);
  }
  if (chunk == "VP8L") {
    if (b.size() < 25 || At(b, 20) != 0x2F) return Bad("WebP", "VP8L chunk lacks its signature");
    const uint32_t bits = Le32(b, 21);
    if ((bits >> 29) != 0) return Bad("WebP", "unknown VP8L version");
    return Dimensions(ImageFormat::kWebp, (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1);
  }
  if (chunk == "VP8X") {
    if (b.size() < 30) return Bad("WebP", "truncated VP8X chunk");
    return Dimensions(ImageFormat::kWebp, Le24(b, 24) + 1, Le24(b, 27) + 1);
  }
  return Bad("WebP", "first chunk is '" + std::string(chunk) + "', not VP8, VP8L or VP8X");
}

std::string FirstBytesHex(std::string_view b) {
  std::string out;
  for (size_t i = 0; i < b.size() && i < 8; ++i) {
    char hex[4];
    std::snprintf(hex, sizeof hex, i ? " %02x" : "%02x", At(b, i));
    out += hex;
  }
  return out.empty() ? "none" : out;
}

}  // namespace

std::string_view MimeType(ImageFormat format) {
  switch (format) {
    case ImageFormat::kPng:
      return "image/png";
    case ImageFormat::kJpeg:
      return "image/jpeg";
    case ImageFormat::kGif:
      return "image/gif";
    case ImageFormat::kWebp:
      return "image/webp";
  }
  return "application/octet-stream";
}

Result<ImageInfo> InspectImage(std::string_view b) {
  if (b.starts_with("\x89PNG\r\n\x1a\n")) return InspectPng(b);
  if (b.starts_with("\xFF\xD8\xFF")) return InspectJpeg(b);
  if (b.starts_with("GIF87a") || b.starts_with("GIF89a")) return InspectGif(b);
  if (b.size() >= 12 && b.starts_with("RIFF") && b.substr(8, 4) == "WEBP") return InspectWebp(b);
  return Status::InvalidArgument(
      "not a PNG, JPEG, GIF or WebP image (first bytes: " + FirstBytesHex(b) + ")");
}

}  // namespace trainwatch
