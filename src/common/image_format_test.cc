// InspectImage: the format and size of each kind, the refusals with their reasons, and untrusted
// bytes (every truncation, random bytes behind each signature) read without overrunning.
#include "common/image_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/testing/image_test_util.h"

namespace trainwatch {
namespace {

using ::testing::HasSubstr;
using namespace test_images;

void ExpectImage(const std::string& bytes, ImageFormat format, uint32_t width, uint32_t height) {
  Result<ImageInfo> info = InspectImage(bytes);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->format, format);
  EXPECT_EQ(info->width, width);
  EXPECT_EQ(info->height, height);
}

std::string Refusal(const std::string& bytes) {
  Result<ImageInfo> info = InspectImage(bytes);
  EXPECT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), StatusCode::kInvalidArgument);
  return info.status().message();
}

TEST(ImageFormatTest, ReadsFormatAndSizeOfEachKind) {
  ExpectImage(Png(3, 2), ImageFormat::kPng, 3, 2);
  ExpectImage(Png(1, 70000, 16, 6), ImageFormat::kPng, 1, 70000);
  ExpectImage(Png(5, 4, 1, 0), ImageFormat::kPng, 5, 4);
  ExpectImage(Jpeg(0xC0, 640, 480), ImageFormat::kJpeg, 640, 480);
  ExpectImage(Jpeg(0xC2, 65535, 1), ImageFormat::kJpeg, 65535, 1);  // progressive
  ExpectImage(Gif(10, 20), ImageFormat::kGif, 10, 20);
  ExpectImage(WebpLossy(300, 200), ImageFormat::kWebp, 300, 200);
  ExpectImage(WebpLossless(16384, 1), ImageFormat::kWebp, 16384, 1);
  ExpectImage(WebpExtended(1 << 20, 3), ImageFormat::kWebp, 1 << 20, 3);
  EXPECT_EQ(MimeType(ImageFormat::kPng), "image/png");
  EXPECT_EQ(MimeType(ImageFormat::kJpeg), "image/jpeg");
  EXPECT_EQ(MimeType(ImageFormat::kGif), "image/gif");
  EXPECT_EQ(MimeType(ImageFormat::kWebp), "image/webp");
}

TEST(ImageFormatTest, RefusesWhatIsNoImageOrHasNoSize) {
  EXPECT_THAT(Refusal(""), HasSubstr("not a PNG, JPEG, GIF or WebP image (first bytes: none)"));
  EXPECT_THAT(Refusal("<html><body>"), HasSubstr("first bytes: 3c 68 74 6d 6c 3e 3c 62"));
  EXPECT_THAT(Refusal("BM6\x00\x00\x00"), HasSubstr("not a PNG"));  // BMP: not served
  std::string png = Png(4, 4);
  png[30] ^= 1;  // inside the IHDR's CRC
  EXPECT_THAT(Refusal(png), HasSubstr("IHDR checksum mismatch"));
  EXPECT_THAT(Refusal(Png(0, 4)), HasSubstr("0x4 pixels"));
  EXPECT_THAT(Refusal(Png(4, 4, 8, 3 + 4)), HasSubstr("not a valid combination"));
  EXPECT_THAT(Refusal(Png(4, 4, 4, 2)), HasSubstr("bit depth 4 with colour type 2"));
  EXPECT_THAT(Refusal(Png(0x80000000u, 1)), HasSubstr("beyond 2^31 - 1"));
  EXPECT_THAT(Refusal(Jpeg(0xC0, 10, 0)), HasSubstr("10x0 pixels"));
  EXPECT_THAT(Refusal(Jpeg(0xC4, 10, 10)), HasSubstr("no frame header before marker 0xDA"));
  EXPECT_THAT(Refusal(Gif(0, 7)), HasSubstr("GIF image"));
  std::string riff = WebpLossy(3, 3);
  EXPECT_THAT(Refusal(riff.substr(0, riff.size() - 1)), HasSubstr("RIFF header says"));
  std::string inter = WebpLossy(3, 3);
  inter[20] |= 1;  // an inter frame cannot come first
  EXPECT_THAT(Refusal(inter), HasSubstr("key frame"));
  EXPECT_THAT(Refusal(Riff("ALPH", std::string(12, '\0'))), HasSubstr("first chunk is 'ALPH'"));
}

TEST(ImageFormatTest, EveryTruncationAndRandomTailIsReadSafely) {
  // Each sample with the length of its header: the size is read from the header, so every prefix
  // that ends within it is refused and every longer one accepted (bytes after the header are not
  // read; a browser shows what it can of a cut image). WebP's RIFF header gives the file's length.
  const std::vector<std::pair<std::string, size_t>> samples = {
      {Png(7, 9), 33},      {Jpeg(0xC1, 33, 44), 41},  {Gif(5, 6), 10},
      {WebpLossy(8, 9), 0}, {WebpLossless(10, 11), 0}, {WebpExtended(12, 13), 0}};
  for (const auto& [sample, header] : samples) {
    const size_t needed = header == 0 ? sample.size() : header;
    for (size_t n = 0; n <= sample.size(); ++n) {
      Result<ImageInfo> info = InspectImage(sample.substr(0, n));
      EXPECT_EQ(info.ok(), n >= needed) << "prefix of " << n << " bytes of " << sample.substr(0, 4);
    }
  }
  std::mt19937 rng(42);
  const std::vector<std::string> signatures = {"\x89PNG\r\n\x1a\n", "\xFF\xD8\xFF", "GIF89a",
                                               "RIFF"};
  for (int i = 0; i < 20000; ++i) {
    std::string bytes = signatures[i % signatures.size()];
    if (bytes == "RIFF") bytes += std::string("\x10\x00\x00\x00WEBP", 8);
    const size_t tail = rng() % 64;
    for (size_t k = 0; k < tail; ++k)
      bytes.push_back(static_cast<char>(rng() % 4 == 0 ? 0xFF : rng()));
    Result<ImageInfo> info = InspectImage(bytes);
    if (info.ok()) {
      EXPECT_GT(info->width, 0u);
      EXPECT_GT(info->height, 0u);
    } else {
      EXPECT_EQ(info.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace trainwatch
