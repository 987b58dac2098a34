// Images and texts: what a run logs per (tag, step) besides numbers (docs/format/store.md, "i",
// "t").
//
// An image entry points at its encoded bytes by SHA-256: the bytes are stored once (a "blob")
// however many entries of any run refer to them, and a blob goes when the last entry referring to
// it does. Several images of one tag at one step are told apart by `index`; a text has one value
// per step.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "storage/histogram.h"
#include "storage/image_format.h"

namespace trainwatch::storage {

// What the engine keeps in memory for one image or text tag of a run (the "I" and "T" records):
// the same fields, and the same encoding, as a histogram name's summary. `count` counts entries
// ((step, index) pairs for images).
using TagSummary = HistogramSeriesInfo;

inline constexpr size_t kSha256Bytes = 32;

struct ImageEntry {
  std::string name;  // the tag; filled in by reads (it is part of the key)
  int64_t step = 0;
  uint32_t index = 0;
  double time = 0;  // unix seconds
  std::string caption;
  std::string sha256;  // kSha256Bytes raw bytes: the blob's key
  ImageFormat format = ImageFormat::kPng;
  uint32_t width = 0;
  uint32_t height = 0;
  uint64_t size = 0;  // bytes of the blob
};

struct TextEntry {
  std::string name;  // the tag; filled in by reads
  int64_t step = 0;
  double time = 0;
  std::string value;
};

// How the set of stored blobs changed (for the blob gauges).
struct BlobChange {
  int64_t blobs = 0;
  int64_t bytes = 0;
};

// Which entries a read returns: one tag (or every tag, in name order), a step range, and at most
// `limit` of them (the first in (name, step, index) order).
struct MediaReadOptions {
  std::string name;  // empty: every tag
  int64_t from_step = 0;
  int64_t to_step = std::numeric_limits<int64_t>::max();
  size_t limit = std::numeric_limits<size_t>::max();
};

}  // namespace trainwatch::storage
