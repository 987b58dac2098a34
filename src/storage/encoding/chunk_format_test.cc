// The example of docs/format/chunk.md, checked against the real codec: the documented points
// encode to exactly the documented bytes, and the bytes decode to the points with the documented
// column encodings.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/testing/doc_examples.h"
#include "storage/encoding/chunk_codec.h"

namespace trainwatch::storage {
namespace {

// The points of the example, as the document states them.
const std::vector<Point> kPoints = {{0, 1000.0, 0.5}, {1, 1001.0, 0.25}, {2, 1002.0, 0.125}};

std::string DocumentedChunk() {
  auto examples = test::ReadDocExamples(std::string(TRAINWATCH_DOCS_DIR) + "/format/chunk.md");
  EXPECT_TRUE(examples.ok()) << examples.status().ToString();
  if (!examples.ok() || !examples->count("chunk")) {
    ADD_FAILURE() << "chunk.md has no example 'chunk'";
    return "";
  }
  return (*examples)["chunk"][""];
}

TEST(ChunkFormatTest, DocumentedExampleIsWhatTheEncoderWrites) {
  auto encoded = EncodeChunk(kPoints);
  ASSERT_TRUE(encoded.ok());
  EXPECT_EQ(DocumentedChunk(), *encoded) << "the encoder writes\n" << test::HexLines(*encoded);
}

TEST(ChunkFormatTest, DocumentedExampleDecodes) {
  const std::string doc = DocumentedChunk();
  std::vector<Point> points;
  ASSERT_TRUE(DecodeChunk(doc, &points).ok());
  ASSERT_EQ(points.size(), kPoints.size());
  for (size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(points[i].step, kPoints[i].step);
    EXPECT_EQ(points[i].time, kPoints[i].time);
    EXPECT_EQ(points[i].value, kPoints[i].value);
  }
  auto stats = InspectChunk(doc);
  ASSERT_TRUE(stats.ok());
  // The names the document gives.
  EXPECT_EQ(stats->step_encoding, "int.plain.bitpack");
  EXPECT_EQ(stats->time_encoding, "decimal0.plain.bitpack");
  EXPECT_EQ(stats->value_encoding, "decimal3.plain.bitpack");
}

}  // namespace
}  // namespace trainwatch::storage
