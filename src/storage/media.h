// Images and texts: what a run logs per (tag, step) besides numbers, and their store values
// (docs/format/store.md, "i" and "t"). They are per-step entries (step_entry.h).
//
// An image entry points at its encoded bytes by SHA-256: the bytes are stored once (a "blob")
// however many entries of any run refer to them, and a blob goes when the last entry referring to
// it does. Several images of one tag at one step are told apart by `index`; a text has one value
// per step.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "common/image_format.h"
#include "common/status.h"

namespace trainwatch::storage {

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

// The "i" value of an image entry (its tag, step and index are in the key).
std::string EncodeImageEntry(const ImageEntry& entry);
// Decodes an "i" value (name, step and index are left as they are); false if it is not one.
bool DecodeImageEntry(std::string_view data, ImageEntry* entry);
// The "t" value of a text, and back.
std::string EncodeTextEntry(const TextEntry& entry);
bool DecodeTextEntry(std::string_view data, TextEntry* entry);
// The time of an "i" or "t" value (both start with the version and the time). Corruption if the
// value is too short or of an unknown version.
Result<double> DecodeMediaEntryTime(std::string_view data);

}  // namespace trainwatch::storage
