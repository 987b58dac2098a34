#include "storage/encoding/int_column.h"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>

#include "storage/encoding/bit_stream.h"
#include "storage/encoding/varint.h"

namespace trainwatch::storage::encoding {
namespace {

constexpr int kMaxOrder = 2;
constexpr uint8_t kOrderMask = 0x03;
constexpr uint8_t kBitpackFlag = 0x04;
constexpr std::array<const char*, kMaxOrder + 1> kOrderNames = {"plain", "delta", "dod"};
// A bit-packed layout this small leaves nothing for a varint layout + zstd to win.
constexpr size_t kTinyBitpacked = 16;

// The value of `x` differenced `order` times at index i; the first `order` values keep their
// partial differences (x0, x1 - x0, ...). Wrapping arithmetic, so every int64 sequence round-trips.
inline uint64_t DiffAt(std::span<const int64_t> x, int order, size_t i) {
  const auto at = [&](size_t j) { return static_cast<uint64_t>(x[j]); };
  if (order == 0 || i == 0) return at(i);
  if (order == 1 || i == 1) return at(i) - at(i - 1);
  return at(i) - 2 * at(i - 1) + at(i - 2);
}

inline size_t ZigZagLength(uint64_t v) {
  return VarintLength(ZigZagEncode(static_cast<int64_t>(v)));
}

// What the two layouts of each differencing order cost, in bytes.
struct LayoutCosts {
  std::array<size_t, kMaxOrder + 1> varint{};
  std::array<size_t, kMaxOrder + 1> bitpacked{};
  std::array<int64_t, kMaxOrder + 1> reference{};  // frame-of-reference minimum of packed values
  std::array<int, kMaxOrder + 1> width{};          // bits per packed value
};

LayoutCosts Cost(std::span<const int64_t> x) {
  const size_t n = x.size();
  LayoutCosts costs;
  std::array<int64_t, kMaxOrder + 1> lo, hi;
  lo.fill(std::numeric_limits<int64_t>::max());
  hi.fill(std::numeric_limits<int64_t>::min());
  for (int r = 0; r <= kMaxOrder; ++r) costs.varint[r] = costs.bitpacked[r] = 1;  // layout byte
  for (size_t i = 0; i < n; ++i) {
    for (int r = 0; r <= kMaxOrder; ++r) {
      const uint64_t d = DiffAt(x, r, i);
      const size_t len = ZigZagLength(d);
      costs.varint[r] += len;
      if (i < static_cast<size_t>(r)) {
        costs.bitpacked[r] += len;  // a seed
      } else {
        lo[r] = std::min(lo[r], static_cast<int64_t>(d));
        hi[r] = std::max(hi[r], static_cast<int64_t>(d));
      }
    }
  }
  for (int r = 0; r <= kMaxOrder; ++r) {
    const size_t seeds = std::min<size_t>(r, n);
    if (seeds == n) continue;
    costs.reference[r] = lo[r];
    costs.width[r] = std::bit_width(static_cast<uint64_t>(hi[r]) - static_cast<uint64_t>(lo[r]));
    costs.bitpacked[r] +=
        VarintLength(ZigZagEncode(lo[r])) + 1 + ((n - seeds) * costs.width[r] + 7) / 8;
  }
  return costs;
}

std::string BuildVarint(std::span<const int64_t> x, int order) {
  std::string out(1 + x.size() * kMaxVarint64Bytes, '\0');
  out[0] = static_cast<char>(order);
  char* p = out.data() + 1;
  for (size_t i = 0; i < x.size(); ++i) {
    p = EncodeVarint64(p, ZigZagEncode(static_cast<int64_t>(DiffAt(x, order, i))));
  }
  out.resize(p - out.data());
  return out;
}

std::string BuildBitpacked(std::span<const int64_t> x, int order, const LayoutCosts& costs) {
  const size_t n = x.size();
  const size_t seeds = std::min<size_t>(order, n);
  std::string out(1 + (seeds + 1) * kMaxVarint64Bytes + 1, '\0');
  out[0] = static_cast<char>(order | kBitpackFlag);
  char* p = out.data() + 1;
  for (size_t i = 0; i < seeds; ++i) {
    p = EncodeVarint64(p, ZigZagEncode(static_cast<int64_t>(DiffAt(x, order, i))));
  }
  const int width = costs.width[order];
  if (seeds < n) {
    p = EncodeVarint64(p, ZigZagEncode(costs.reference[order]));
    *p++ = static_cast<char>(width);
  }
  out.resize(p - out.data());
  if (seeds < n && width > 0) {
    BitWriter bits;
    bits.Reserve((n - seeds) * width);
    const auto reference = static_cast<uint64_t>(costs.reference[order]);
    for (size_t i = seeds; i < n; ++i) bits.Write(DiffAt(x, order, i) - reference, width);
    out += bits.Finish();
  }
  return out;
}

Status Corrupt(const std::string& why) { return Status::Corruption("int column: " + why); }

}  // namespace

IntCandidates EncodeIntColumn(std::span<const int64_t> values) {
  const LayoutCosts costs = Cost(values);
  int best_varint = 0;
  int best_bitpacked = 0;
  for (int r = 1; r <= kMaxOrder; ++r) {
    if (costs.varint[r] < costs.varint[best_varint]) best_varint = r;
    if (costs.bitpacked[r] < costs.bitpacked[best_bitpacked]) best_bitpacked = r;
  }
  IntCandidates out;
  out.bitpacked = BuildBitpacked(values, best_bitpacked, costs);
  if (out.bitpacked.size() > kTinyBitpacked) out.varint = BuildVarint(values, best_varint);
  return out;
}

void OfferIntColumn(std::span<const int64_t> values, ColumnEncoding encoding,
                    std::string_view prefix, CandidatePicker* picker) {
  IntCandidates candidates = EncodeIntColumn(values);
  picker->Offer(encoding, std::string(prefix) + candidates.bitpacked);
  if (!candidates.varint.empty()) {
    picker->OfferWithZstd(encoding, std::string(prefix) + candidates.varint);
  }
}

Status DecodeIntColumn(std::string_view payload, uint32_t count, int64_t* out) {
  if (payload.empty()) return Corrupt("empty payload");
  const auto layout = static_cast<uint8_t>(payload[0]);
  const int order = layout & kOrderMask;
  if ((layout & ~(kOrderMask | kBitpackFlag)) != 0 || order > kMaxOrder) {
    return Corrupt("bad layout byte " + std::to_string(layout));
  }
  const char* p = payload.data() + 1;
  const char* const limit = payload.data() + payload.size();
  const size_t seeds = (layout & kBitpackFlag) ? std::min<size_t>(order, count) : count;
  for (size_t i = 0; i < seeds; ++i) {
    uint64_t u;
    p = DecodeVarint64(p, limit, &u);
    if (p == nullptr) return Corrupt("bad varint for value " + std::to_string(i));
    out[i] = ZigZagDecode(u);
  }
  if (seeds < count) {
    uint64_t u;
    p = DecodeVarint64(p, limit, &u);
    if (p == nullptr) return Corrupt("bad frame-of-reference varint");
    const auto reference = static_cast<uint64_t>(ZigZagDecode(u));
    if (p == limit) return Corrupt("missing bit width");
    const int width = static_cast<unsigned char>(*p++);
    if (width > 64) return Corrupt("bit width " + std::to_string(width) + " > 64");
    const size_t packed = count - seeds;
    const size_t expected = (packed * width + 7) / 8;
    if (static_cast<size_t>(limit - p) != expected) {
      return Corrupt("bit-packed body is " + std::to_string(limit - p) + " bytes, expected " +
                     std::to_string(expected));
    }
    BitReader bits(std::string_view(p, expected));
    for (size_t i = seeds; i < count; ++i) {
      uint64_t delta = 0;
      if (!bits.Read(width, &delta)) return Corrupt("bit-packed body ends early");
      out[i] = static_cast<int64_t>(reference + delta);
    }
    if (!bits.AtPaddedEnd()) return Corrupt("nonzero padding bits");
    p = limit;
  }
  if (p != limit) return Corrupt(std::to_string(limit - p) + " bytes after the last value");
  for (int r = order; r >= 1; --r) {
    for (size_t i = r; i < count; ++i) {
      out[i] =
          static_cast<int64_t>(static_cast<uint64_t>(out[i]) + static_cast<uint64_t>(out[i - 1]));
    }
  }
  return Status::Ok();
}

std::string DescribeIntColumn(std::string_view payload) {
  if (payload.empty()) return "?";
  const auto layout = static_cast<uint8_t>(payload[0]);
  const int order = layout & kOrderMask;
  if ((layout & ~(kOrderMask | kBitpackFlag)) != 0 || order > kMaxOrder) return "?";
  return std::string(kOrderNames[order]) + ((layout & kBitpackFlag) ? ".bitpack" : ".varint");
}

}  // namespace trainwatch::storage::encoding
