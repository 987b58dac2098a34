#include "storage/encoding/chunk_codec.h"

#include <array>
#include <bit>
#include <utility>

#include "storage/encoding/column_encoding.h"
#include "storage/encoding/float_column.h"
#include "storage/encoding/int_column.h"
#include "storage/encoding/varint.h"
#include "storage/encoding/zstd_frame.h"

namespace trainwatch::storage {

static_assert(std::endian::native == std::endian::little,
              "the chunk format stores little-endian patterns with memcpy");

namespace {

using encoding::ColumnEncoding;
using encoding::EncodedColumn;

enum Column { kStepColumn = 0, kTimeColumn = 1, kValueColumn = 2, kColumns = 3 };
constexpr std::array<const char*, kColumns> kColumnNames = {"step", "time", "value"};

// The most bytes any encoding's raw payload takes for `count` values (a Gorilla64 value costs at
// most 78 bits, a varint 10 bytes, plus a few bytes of parameters).
size_t MaxRawBytes(uint32_t count) { return 32 + size_t{11} * count; }

// A chunk split into its header fields and column payloads (views into the encoded bytes).
struct ChunkLayout {
  uint32_t count = 0;
  std::array<uint8_t, kColumns> tags{};
  std::array<std::string_view, kColumns> payloads;
};

Status ParseLayout(std::string_view encoded, ChunkLayout* layout) {
  if (encoded.empty()) return Status::Corruption("empty chunk");
  if (static_cast<uint8_t>(encoded[0]) != kChunkFormatVersion) {
    return Status::Corruption("unknown chunk format version " +
                              std::to_string(static_cast<uint8_t>(encoded[0])));
  }
  const char* p = encoded.data() + 1;
  const char* const limit = encoded.data() + encoded.size();
  uint64_t count = 0;
  p = encoding::DecodeVarint64(p, limit, &count);
  if (p == nullptr) return Status::Corruption("bad point count varint");
  if (count == 0 || count > kMaxChunkPoints) {
    return Status::Corruption("point count " + std::to_string(count) + " outside [1, " +
                              std::to_string(kMaxChunkPoints) + "]");
  }
  layout->count = static_cast<uint32_t>(count);
  if (limit - p < kColumns) return Status::Corruption("chunk ends inside the column tags");
  for (int c = 0; c < kColumns; ++c) layout->tags[c] = static_cast<uint8_t>(*p++);
  std::array<uint64_t, kColumns> lengths{};
  for (int c = 0; c < kColumns; ++c) {
    p = encoding::DecodeVarint64(p, limit, &lengths[c]);
    if (p == nullptr) return Status::Corruption(std::string("bad ") + kColumnNames[c] + " length");
  }
  for (int c = 0; c < kColumns; ++c) {
    if (lengths[c] > static_cast<uint64_t>(limit - p)) {
      return Status::Corruption(std::string(kColumnNames[c]) + " payload of " +
                                std::to_string(lengths[c]) + " bytes runs past the chunk end");
    }
    layout->payloads[c] = std::string_view(p, lengths[c]);
    p += lengths[c];
  }
  if (p != limit) {
    return Status::Corruption(std::to_string(limit - p) + " bytes after the last column");
  }
  return Status::Ok();
}

// Checks the tag of column `c` and sets *raw to its raw payload (decompressed into *scratch).
Status UnwrapColumn(const ChunkLayout& layout, int c, std::string* scratch, std::string_view* raw) {
  const uint8_t tag = layout.tags[c];
  const auto id = static_cast<ColumnEncoding>(tag & ~encoding::kZstdTagBit);
  const bool zstd = (tag & encoding::kZstdTagBit) != 0;
  const bool allowed = c == kStepColumn ? id == ColumnEncoding::kInt64
                       : c == kTimeColumn
                           ? (id == ColumnEncoding::kAbsent || encoding::IsFloatEncoding(id))
                           : encoding::IsFloatEncoding(id);
  if (!allowed) return Status::Corruption("encoding tag " + std::to_string(tag) + " not allowed");
  if (id == ColumnEncoding::kAbsent) {
    if (zstd || !layout.payloads[c].empty())
      return Status::Corruption("absent column has a payload");
    *raw = {};
    return Status::Ok();
  }
  if (!zstd) {
    *raw = layout.payloads[c];
    return Status::Ok();
  }
  TW_RETURN_IF_ERROR(
      encoding::ZstdDecompress(layout.payloads[c], MaxRawBytes(layout.count), scratch));
  *raw = *scratch;
  return Status::Ok();
}

// The decoded columns of a chunk; `names` only when asked for.
struct DecodedColumns {
  std::vector<int64_t> steps;
  std::vector<double> times;  // all 0 when the time column is absent
  std::vector<double> values;
  std::array<std::string, kColumns> names;
};

Status DecodeColumn(const ChunkLayout& layout, int c, bool describe, DecodedColumns* out) {
  std::string scratch;
  std::string_view raw;
  TW_RETURN_IF_ERROR(UnwrapColumn(layout, c, &scratch, &raw));
  const auto id = static_cast<ColumnEncoding>(layout.tags[c] & ~encoding::kZstdTagBit);
  const uint32_t n = layout.count;
  if (c == kStepColumn) {
    out->steps.resize(n);
    TW_RETURN_IF_ERROR(encoding::DecodeIntColumn(raw, n, out->steps.data()));
    for (uint32_t i = 1; i < n; ++i) {
      if (out->steps[i] <= out->steps[i - 1]) {
        return Status::Corruption("steps not increasing at point " + std::to_string(i));
      }
    }
  } else {
    std::vector<double>& dst = c == kTimeColumn ? out->times : out->values;
    dst.assign(n, 0.0);
    if (id != ColumnEncoding::kAbsent) {
      TW_RETURN_IF_ERROR(encoding::DecodeFloatColumn(id, raw, n, dst.data()));
    }
  }
  if (describe) {
    out->names[c] = c == kStepColumn                ? "int." + encoding::DescribeIntColumn(raw)
                    : id == ColumnEncoding::kAbsent ? "absent"
                                                    : encoding::DescribeFloatColumn(id, raw);
    if (layout.tags[c] & encoding::kZstdTagBit) out->names[c] += "+zstd";
  }
  return Status::Ok();
}

Status DecodeColumns(std::string_view encoded, bool describe, ChunkLayout* layout,
                     DecodedColumns* out) {
  TW_RETURN_IF_ERROR(ParseLayout(encoded, layout).WithContext("chunk header"));
  for (int c = 0; c < kColumns; ++c) {
    TW_RETURN_IF_ERROR(DecodeColumn(*layout, c, describe, out)
                           .WithContext(std::string(kColumnNames[c]) + " column"));
  }
  return Status::Ok();
}

void AppendVarint(std::string* out, uint64_t v) {
  char buf[encoding::kMaxVarint64Bytes];
  out->append(buf, encoding::EncodeVarint64(buf, v) - buf);
}

}  // namespace

Result<std::string> EncodeChunk(std::span<const Point> points, const EncodeOptions& options) {
  if (points.empty()) return Status::InvalidArgument("chunk has no points");
  if (points.size() > kMaxChunkPoints) {
    return Status::InvalidArgument("chunk has " + std::to_string(points.size()) +
                                   " points, more than " + std::to_string(kMaxChunkPoints));
  }
  if (!encoding::ZstdLevelValid(options.zstd_level)) {
    return Status::InvalidArgument("zstd level " + std::to_string(options.zstd_level));
  }
  const size_t n = points.size();
  std::vector<int64_t> steps(n);
  for (size_t i = 0; i < n; ++i) {
    steps[i] = points[i].step;
    if (i > 0 && steps[i] <= steps[i - 1]) {
      return Status::InvalidArgument("step " + std::to_string(steps[i]) + " at point " +
                                     std::to_string(i) + " does not exceed the previous step " +
                                     std::to_string(steps[i - 1]));
    }
  }
  std::array<EncodedColumn, kColumns> columns;
  encoding::CandidatePicker step_picker(options.zstd_level);
  encoding::OfferIntColumn(steps, ColumnEncoding::kInt64, "", &step_picker);
  columns[kStepColumn] = step_picker.Take();

  std::vector<double> doubles(n);
  if (!options.times_absent) {
    for (size_t i = 0; i < n; ++i) doubles[i] = points[i].time;
    columns[kTimeColumn] = encoding::EncodeFloatColumn(doubles, options.zstd_level);
  }
  for (size_t i = 0; i < n; ++i) doubles[i] = points[i].value;
  columns[kValueColumn] = encoding::EncodeFloatColumn(doubles, options.zstd_level);

  std::string out;
  out.reserve(32 + columns[0].payload.size() + columns[1].payload.size() +
              columns[2].payload.size());
  out.push_back(static_cast<char>(kChunkFormatVersion));
  AppendVarint(&out, n);
  for (const EncodedColumn& column : columns) out.push_back(static_cast<char>(column.tag()));
  for (const EncodedColumn& column : columns) AppendVarint(&out, column.payload.size());
  for (const EncodedColumn& column : columns) out += column.payload;
  return out;
}

Status DecodeChunk(std::string_view encoded, std::vector<Point>* out) {
  ChunkLayout layout;
  DecodedColumns columns;
  TW_RETURN_IF_ERROR(DecodeColumns(encoded, /*describe=*/false, &layout, &columns));
  const size_t base = out->size();
  out->resize(base + layout.count);
  Point* dst = out->data() + base;
  for (uint32_t i = 0; i < layout.count; ++i) {
    dst[i] = Point{columns.steps[i], columns.times[i], columns.values[i]};
  }
  return Status::Ok();
}

Result<ChunkStats> InspectChunk(std::string_view encoded) {
  ChunkLayout layout;
  DecodedColumns columns;
  TW_RETURN_IF_ERROR(DecodeColumns(encoded, /*describe=*/true, &layout, &columns));
  ChunkStats stats;
  stats.count = layout.count;
  stats.step_encoding = std::move(columns.names[kStepColumn]);
  stats.time_encoding = std::move(columns.names[kTimeColumn]);
  stats.value_encoding = std::move(columns.names[kValueColumn]);
  stats.step_bytes = layout.payloads[kStepColumn].size();
  stats.time_bytes = layout.payloads[kTimeColumn].size();
  stats.value_bytes = layout.payloads[kValueColumn].size();
  stats.total_bytes = encoded.size();
  return stats;
}

}  // namespace trainwatch::storage
