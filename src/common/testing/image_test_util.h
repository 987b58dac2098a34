// Hand-built encoded images for tests: well-formed headers (and, for PNG, a whole valid file) of
// every format the server accepts, at any size.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace trainwatch::test_images {

inline void Be32(std::string* out, uint32_t v) {
  for (int shift : {24, 16, 8, 0}) out->push_back(static_cast<char>((v >> shift) & 0xFF));
}
inline void Be16(std::string* out, uint32_t v) {
  out->push_back(static_cast<char>((v >> 8) & 0xFF));
  out->push_back(static_cast<char>(v & 0xFF));
}
inline void Le16(std::string* out, uint32_t v) {
  out->push_back(static_cast<char>(v & 0xFF));
  out->push_back(static_cast<char>((v >> 8) & 0xFF));
}
inline void Le24(std::string* out, uint32_t v) {
  Le16(out, v & 0xFFFF);
  out->push_back(static_cast<char>((v >> 16) & 0xFF));
}
inline void Le32(std::string* out, uint32_t v) {
  Le16(out, v & 0xFFFF);
  Le16(out, v >> 16);
}

inline void PngChunk(std::string* out, const std::string& type, const std::string& data) {
  Be32(out, static_cast<uint32_t>(data.size()));
  std::string body = type + data;
  out->append(body);
  Be32(out,
       static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), body.size())));
}

// A PNG of width x height pixels (depth 8, RGB unless told otherwise) whose pixel data covers at
// most 64 x 64 RGB pixels: a whole valid file up to that size, a valid header beyond. `seed` varies
// the pixels (and so the content's hash).
inline std::string Png(uint32_t width, uint32_t height, uint8_t depth = 8, uint8_t colour = 2,
                       uint8_t seed = 0) {
  std::string out = "\x89PNG\r\n\x1a\n";
  std::string ihdr;
  Be32(&ihdr, width);
  Be32(&ihdr, height);
  ihdr += {static_cast<char>(depth), static_cast<char>(colour), 0, 0, 0};
  PngChunk(&out, "IHDR", ihdr);
  std::string raw;
  for (uint32_t y = 0; y < height && y < 64; ++y) {
    raw.push_back(0);  // filter: none
    for (uint32_t x = 0; x < width * 3 && x < 192; ++x)
      raw.push_back(static_cast<char>(x * 7 + y + seed));
  }
  std::vector<Bytef> packed(compressBound(raw.size()));
  uLongf packed_size = packed.size();
  compress(packed.data(), &packed_size, reinterpret_cast<const Bytef*>(raw.data()), raw.size());
  PngChunk(&out, "IDAT", std::string(reinterpret_cast<const char*>(packed.data()), packed_size));
  PngChunk(&out, "IEND", "");
  return out;
}

// SOI, a JFIF APP0 segment, fill bytes, the frame header `sof` and a scan: what encoders write.
inline std::string Jpeg(uint8_t sof, uint32_t width, uint32_t height) {
  std::string out = "\xFF\xD8";
  out += "\xFF\xE0";
  Be16(&out, 16);
  out += std::string("JFIF\0\x01\x01\x00\x00\x01\x00\x01\x00\x00", 14);
  out += "\xFF\xFF";  // fill bytes before a marker are allowed
  out.push_back('\xFF');
  out.push_back(static_cast<char>(sof));
  Be16(&out, 17);
  out.push_back(8);
  Be16(&out, height);
  Be16(&out, width);
  out += std::string("\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01", 10);
  out += "\xFF\xDA";
  Be16(&out, 12);
  out += std::string("\x03\x01\x00\x02\x11\x03\x11\x00\x3F\x00", 10);
  out += "\x12\x34\xFF\x00\x56\xFF\xD9";
  return out;
}

inline std::string Gif(uint32_t width, uint32_t height) {
  std::string out = "GIF89a";
  Le16(&out, width);
  Le16(&out, height);
  out += std::string("\x80\x00\x00\x00\x00\x00\xFF\xFF\xFF", 9);  // 2-colour global table
  out += std::string("\x2C\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02\x44\x01\x00\x3B", 16);
  return out;
}

inline std::string Riff(const std::string& chunk, const std::string& payload) {
  std::string body = "WEBP" + chunk;
  Le32(&body, static_cast<uint32_t>(payload.size()));
  body += payload;
  std::string out = "RIFF";
  Le32(&out, static_cast<uint32_t>(body.size()));
  return out + body;
}

inline std::string WebpLossy(uint32_t width, uint32_t height) {
  std::string p = std::string("\x50\x02\x00\x9D\x01\x2A", 6);  // key frame tag, start code
  Le16(&p, width);
  Le16(&p, height);
  p += std::string(10, '\x11');
  return Riff("VP8 ", p);
}

inline std::string WebpLossless(uint32_t width, uint32_t height) {
  std::string p(1, '\x2F');
  Le32(&p, (width - 1) | ((height - 1) << 14) | (1u << 28));  // alpha hint set, version 0
  p += std::string(6, '\x00');
  return Riff("VP8L", p);
}

inline std::string WebpExtended(uint32_t width, uint32_t height) {
  std::string p = std::string("\x10\x00\x00\x00", 4);
  Le24(&p, width - 1);
  Le24(&p, height - 1);
  return Riff("VP8X", p);
}

}  // namespace trainwatch::test_images
