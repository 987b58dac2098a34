#include "tfevents/summary.h"

#include <gtest/gtest.h>

#include <deque>

#include "tfevents/event.h"
#include "tfevents/event_encoder.h"
#include "tfevents/wire_writer.h"

namespace trainwatch::tfevents {
namespace {

std::string Metadata(std::string_view plugin, int data_class = 0) {
  std::string pd;
  WireWriter(&pd).Bytes(1, plugin);
  std::string md;
  WireWriter m(&md);
  m.Bytes(1, pd);
  if (data_class) m.Int32(4, data_class);
  return md;
}

std::string FloatTensor(float v) {
  std::string t;
  WireWriter w(&t);
  w.Int32(1, dtype::kFloat);
  w.Bytes(2, "");
  w.Bytes(4, std::string_view(reinterpret_cast<const char*>(&v), 4));
  return t;
}

std::string Value(std::string_view tag, std::string_view metadata, uint32_t field,
                  std::string_view payload) {
  std::string v;
  WireWriter w(&v);
  w.Bytes(1, tag);
  if (!metadata.empty()) w.Bytes(9, metadata);
  w.Bytes(field, payload);
  return v;
}

std::string Summary(std::initializer_list<std::string> values) {
  std::string s;
  WireWriter w(&s);
  for (const std::string& v : values) w.Bytes(1, v);
  return s;
}

class SummaryDecoderTest : public ::testing::Test {
 protected:
  // Decodes a copy kept alive by the fixture: the result's views point into it.
  DecodedSummary Decode(std::string summary) {
    const std::string& kept = kept_.emplace_back(std::move(summary));
    DecodedSummary out;
    Status s = decoder_.Decode(kept, &out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }
  std::deque<std::string> kept_;
  TagPlugins plugins_;
  SummaryDecoder decoder_{&plugins_};
};

TEST_F(SummaryDecoderTest, SimpleValuesNeedNoMetadata) {
  std::string v;
  WireWriter w(&v);
  w.Bytes(1, "loss");
  w.Float(2, 0.25f);
  DecodedSummary out = Decode(Summary({v}));
  ASSERT_EQ(out.scalars.size(), 1u);
  EXPECT_EQ(out.scalars[0].tag, "loss");
  EXPECT_EQ(out.scalars[0].value, 0.25);
}

TEST_F(SummaryDecoderTest, ScalarTensorsUseTheMetadataOfTheTagsFirstValue) {
  DecodedSummary first = Decode(Summary({Value("acc", Metadata("scalars"), 8, FloatTensor(0.5f))}));
  ASSERT_EQ(first.scalars.size(), 1u);
  EXPECT_EQ(first.scalars[0].value, 0.5);
  DecodedSummary later = Decode(Summary({Value("acc", "", 8, FloatTensor(0.75f))}));
  ASSERT_EQ(later.scalars.size(), 1u);
  EXPECT_EQ(later.scalars[0].value, 0.75);
  // A data class of SCALAR decides whatever the plugin is called.
  DecodedSummary dc =
      Decode(Summary({Value("x", Metadata("custom", kDataClassScalar), 8, FloatTensor(2))}));
  EXPECT_EQ(dc.scalars.size(), 1u);
}

TEST_F(SummaryDecoderTest, TensorsOfUnknownOrOtherPluginsAreSkippedAndNamed) {
  DecodedSummary none = Decode(Summary({Value("t", "", 8, FloatTensor(1))}));
  ASSERT_EQ(none.skipped.size(), 1u);
  EXPECT_EQ(none.skipped[0].what, "tensor without plugin metadata");
  DecodedSummary pr = Decode(Summary({Value("pr", Metadata("pr_curves"), 8, FloatTensor(1))}));
  ASSERT_EQ(pr.skipped.size(), 1u);
  EXPECT_EQ(pr.skipped[0].what, "plugin 'pr_curves'");
}

TEST_F(SummaryDecoderTest, ImagesV1AndV2) {
  std::string image;
  WireWriter iw(&image);
  iw.Int32(1, 20);  // height
  iw.Int32(2, 30);  // width
  iw.Int32(3, 3);
  iw.Bytes(4, "PNGDATA");
  DecodedSummary v1 = Decode(Summary({Value("img", "", 4, image)}));
  ASSERT_EQ(v1.images.size(), 1u);
  EXPECT_EQ(v1.images[0].width, 30);
  EXPECT_EQ(v1.images[0].height, 20);
  EXPECT_EQ(v1.images[0].encoded, "PNGDATA");

  std::string_view imgs[] = {"A", "BB", "CCC"};
  std::string event = EncodeImagesTensorEvent(1, 2, "samples", 8, 6, imgs, true);
  EventView ev;
  ASSERT_TRUE(DecodeEvent(event, &ev).ok());
  DecodedSummary v2 = Decode(std::string(ev.payload));
  ASSERT_EQ(v2.images.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(v2.images[i].index, i);
    EXPECT_EQ(v2.images[i].encoded, imgs[i]);
    EXPECT_EQ(v2.images[i].width, 8);
    EXPECT_EQ(v2.images[i].height, 6);
  }
}

TEST_F(SummaryDecoderTest, TextRankZeroIsTheStringAndHigherRanksAreTables) {
  std::string event = EncodeTextEvent(1, 2, "notes", "# hello *world*", true);
  EventView ev;
  ASSERT_TRUE(DecodeEvent(event, &ev).ok());
  DecodedSummary t0 = Decode(std::string(ev.payload));
  ASSERT_EQ(t0.texts.size(), 1u);
  EXPECT_EQ(t0.texts[0].text, "# hello *world*");

  std::string shape;
  {
    WireWriter s(&shape);
    for (int64_t d : {2, 2}) {
      std::string dim;
      WireWriter(&dim).Int64(1, d);
      s.Bytes(2, dim);
    }
  }
  std::string tensor;
  WireWriter tw(&tensor);
  tw.Int32(1, dtype::kString);
  tw.Bytes(2, shape);
  for (std::string_view s : {"a", "b|c", "line\nbreak", "d"}) tw.Bytes(8, s);
  DecodedSummary t2 = Decode(Summary({Value("notes", "", 8, tensor)}));  // plugin known from before
  ASSERT_EQ(t2.texts.size(), 1u);
  EXPECT_EQ(t2.texts[0].text, "|  |  |\n|---|---|\n| a | b\\|c |\n| line<br>break | d |");
}

TEST_F(SummaryDecoderTest, MalformedValuesAreReportedAndTheRestDecoded) {
  std::string good;
  WireWriter w(&good);
  w.Bytes(1, "ok");
  w.Float(2, 1);
  std::string bad_scalar =
      Value("s", Metadata("scalars"), 8, "\x08\x01\x22\x01z");  // 1-byte content
  DecodedSummary out = Decode(Summary({bad_scalar, good}));
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_EQ(out.errors[0].tag, "s");
  EXPECT_NE(out.errors[0].message.find("tensor_content holds 1 bytes"), std::string::npos);
  ASSERT_EQ(out.scalars.size(), 1u);
  EXPECT_EQ(out.scalars[0].tag, "ok");
  DecodedSummary broken;
  EXPECT_FALSE(decoder_.Decode(std::string_view("\x0a\x09zz", 4), &broken).ok());
}

TEST(EventTest, TopLevelFieldsAndSessionLog) {
  EventView ev;
  const std::string version = EncodeFileVersionEvent(1767225600.5);  // the views point into it
  ASSERT_TRUE(DecodeEvent(version, &ev).ok());
  EXPECT_EQ(ev.kind, EventKind::kFileVersion);
  EXPECT_EQ(ev.payload, "brain.Event:2");
  EXPECT_EQ(ev.wall_time, 1767225600.5);
  const std::string session = EncodeSessionLogEvent(3.0, 40, SessionStatus::kStart);
  ASSERT_TRUE(DecodeEvent(session, &ev).ok());
  EXPECT_EQ(ev.kind, EventKind::kSessionLog);
  EXPECT_EQ(ev.session_status, SessionStatus::kStart);
  EXPECT_EQ(ev.step, 40);
  NamedFloat values[] = {{"a", 1.5f}, {"b", -2}};
  const std::string scalars = EncodeScalarsEvent(4.0, -3, values);
  ASSERT_TRUE(DecodeEvent(scalars, &ev).ok());
  EXPECT_EQ(ev.kind, EventKind::kSummary);
  EXPECT_EQ(ev.step, -3);
  EXPECT_FALSE(DecodeEvent(std::string_view("\x09\x01\x02", 3), &ev).ok());  // truncated double
}

}  // namespace
}  // namespace trainwatch::tfevents
