#include "storage/histogram.h"

#include <cstring>

#include "storage/binary_io.h"
#include "storage/encoding/byte_stream_split.h"
#include "storage/encoding/varint.h"
#include "storage/encoding/zstd_frame.h"

namespace trainwatch::storage {
namespace {

constexpr uint8_t kHistogramVersion = 1;
constexpr uint8_t kCountsVarint = 1;  // flags bit 0
constexpr uint8_t kBodyZstd = 2;      // flags bit 1
constexpr size_t kHeaderBytes = 1 + 1 + 8;
// Bodies smaller than this are stored raw: a zstd frame's own overhead would eat the gain.
constexpr size_t kMinZstdBody = 64;
constexpr int kZstdLevel = 3;
constexpr size_t kMaxBodyBytes = encoding::kMaxVarint64Bytes + 8 * (kMaxHistogramBuckets + 1) +
                                 encoding::kMaxVarint64Bytes * kMaxHistogramBuckets;

// True if `c` reads back bit-exactly from a varint: a non-negative integer below 2^53, not -0.
bool IsVarintCount(double c) {
  if (!(c >= 0 && c < 0x1p53)) return false;
  const double back = static_cast<double>(static_cast<uint64_t>(c));
  return std::memcmp(&back, &c, sizeof c) == 0;
}

void PutVarint(std::string* out, uint64_t v) {
  char buf[encoding::kMaxVarint64Bytes];
  out->append(buf, encoding::EncodeVarint64(buf, v) - buf);
}

}  // namespace

std::string EncodeHistogram(const Histogram& h) {
  bool varints = true;
  for (double c : h.counts) varints = varints && IsVarintCount(c);
  std::string body;
  PutVarint(&body, h.counts.size());
  body += encoding::ByteStreamSplit(h.edges.data(), h.edges.size(), sizeof(double));
  if (varints) {
    for (double c : h.counts) PutVarint(&body, static_cast<uint64_t>(c));
  } else {
    body += encoding::ByteStreamSplit(h.counts.data(), h.counts.size(), sizeof(double));
  }
  uint8_t flags = varints ? kCountsVarint : 0;
  std::string compressed;
  if (body.size() >= kMinZstdBody && encoding::ZstdCompress(body, kZstdLevel, &compressed) &&
      compressed.size() < body.size()) {
    flags |= kBodyZstd;
    body.swap(compressed);
  }
  std::string out;
  out.reserve(kHeaderBytes + body.size());
  out.push_back(static_cast<char>(kHistogramVersion));
  out.push_back(static_cast<char>(flags));
  PutDouble(&out, h.time);
  out += body;
  return out;
}

Result<double> DecodeHistogramTime(std::string_view data) {
  ByteReader in(data);
  uint8_t version = 0, flags = 0;
  double time = 0;
  if (!in.GetByte(&version) || !in.GetByte(&flags) || !in.GetDouble(&time)) {
    return Status::Corruption("histogram value is truncated");
  }
  if (version != kHistogramVersion) {
    return Status::Corruption("unknown histogram format version " + std::to_string(version));
  }
  return time;
}

Status DecodeHistogram(std::string_view data, int64_t step, Histogram* out) {
  TW_ASSIGN_OR_RETURN(out->time, DecodeHistogramTime(data));
  const auto flags = static_cast<uint8_t>(data[1]);
  if ((flags & ~(kCountsVarint | kBodyZstd)) != 0) {
    return Status::Corruption("histogram has unknown flags " + std::to_string(flags));
  }
  std::string_view body = data.substr(kHeaderBytes);
  std::string raw;
  if (flags & kBodyZstd) {
    TW_RETURN_IF_ERROR(
        encoding::ZstdDecompress(body, kMaxBodyBytes, &raw).WithContext("histogram"));
    body = raw;
  }
  const char* p = body.data();
  const char* const limit = body.data() + body.size();
  uint64_t n = 0;
  p = encoding::DecodeVarint64(p, limit, &n);
  if (p == nullptr || n == 0 || n > kMaxHistogramBuckets) {
    return Status::Corruption("histogram has a bad bucket count");
  }
  const size_t edge_bytes = 8 * (n + 1);
  if (static_cast<size_t>(limit - p) < edge_bytes)
    return Status::Corruption("histogram edges truncated");
  out->step = step;
  out->edges.resize(n + 1);
  encoding::ByteStreamJoin(std::string_view(p, edge_bytes), n + 1, sizeof(double),
                           out->edges.data());
  p += edge_bytes;
  out->counts.resize(n);
  if (flags & kCountsVarint) {
    for (double& c : out->counts) {
      uint64_t v = 0;
      p = encoding::DecodeVarint64(p, limit, &v);
      if (p == nullptr) return Status::Corruption("histogram counts truncated");
      c = static_cast<double>(v);
    }
  } else {
    if (static_cast<size_t>(limit - p) < 8 * n)
      return Status::Corruption("histogram counts truncated");
    encoding::ByteStreamJoin(std::string_view(p, 8 * n), n, sizeof(double), out->counts.data());
    p += 8 * n;
  }
  if (p != limit) return Status::Corruption("histogram has trailing bytes");
  return Status::Ok();
}

}  // namespace trainwatch::storage
