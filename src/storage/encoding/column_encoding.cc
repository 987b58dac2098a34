#include "storage/encoding/column_encoding.h"

#include <array>
#include <bit>
#include <cmath>
#include <utility>

#include "storage/encoding/zstd_frame.h"

namespace trainwatch::storage::encoding {
namespace {

// Below this a zstd frame (about 12 bytes of framing) cannot pay for itself.
constexpr size_t kMinZstdInput = 24;

// log2(1 + i/256) for i in [0, 256].
const std::array<float, 257>& Log2Fractions() {
  static const std::array<float, 257> table = [] {
    std::array<float, 257> t{};
    for (int i = 0; i <= 256; ++i) t[i] = static_cast<float>(std::log2(1.0 + i / 256.0));
    return t;
  }();
  return table;
}

// log2(v) for v >= 1, within 0.006.
double FastLog2(uint64_t v) {
  const int exponent = std::bit_width(v) - 1;
  const uint64_t fraction =
      exponent >= 8 ? (v >> (exponent - 8)) & 0xFF : (v << (8 - exponent)) & 0xFF;
  return exponent + Log2Fractions()[fraction];
}

}  // namespace

std::string_view ColumnEncodingName(ColumnEncoding encoding) {
  switch (encoding) {
    case ColumnEncoding::kAbsent:
      return "absent";
    case ColumnEncoding::kInt64:
      return "int";
    case ColumnEncoding::kConstant:
      return "const";
    case ColumnEncoding::kDecimal:
      return "decimal";
    case ColumnEncoding::kFloat32Split:
      return "f32.split";
    case ColumnEncoding::kFloat32Gorilla:
      return "f32.gorilla";
    case ColumnEncoding::kFloat32Bits:
      return "f32.bits";
    case ColumnEncoding::kFloat64Split:
      return "f64.split";
    case ColumnEncoding::kFloat64Gorilla:
      return "f64.gorilla";
    case ColumnEncoding::kFloat64Bits:
      return "f64.bits";
  }
  return "unknown";
}

bool IsFloatEncoding(ColumnEncoding encoding) {
  return encoding != ColumnEncoding::kAbsent && encoding != ColumnEncoding::kInt64 &&
         static_cast<uint8_t>(encoding) <= kMaxColumnEncoding;
}

void CandidatePicker::Offer(ColumnEncoding encoding, std::string raw) {
  if (raw.empty() && encoding != ColumnEncoding::kAbsent) return;
  if (raw.size() < best_size()) {
    best_ = EncodedColumn{encoding, false, std::move(raw)};
    has_best_ = true;
  }
}

void CandidatePicker::OfferWithZstd(ColumnEncoding encoding, std::string raw, size_t planes) {
  if (raw.size() >= kMinZstdInput && (!has_best_ || EntropyBytes(raw, planes) < best_size())) {
    std::string frame;
    if (ZstdCompress(raw, zstd_level_, &frame) && frame.size() < raw.size() &&
        frame.size() < best_size()) {
      best_ = EncodedColumn{encoding, true, std::move(frame)};
      has_best_ = true;
      return;  // raw is larger than its frame, hence than the new best
    }
  }
  Offer(encoding, std::move(raw));
}

size_t EntropyBytes(std::string_view bytes, size_t planes) {
  const size_t plane_size = bytes.size() / planes;
  double bits = 0;
  for (size_t p = 0; p < planes; ++p) {
    const std::string_view plane = bytes.substr(p * plane_size, plane_size);
    if (plane.empty()) continue;
    std::array<uint32_t, 256> counts{};
    for (char c : plane) ++counts[static_cast<unsigned char>(c)];
    // Entropy = n log2 n - sum(c log2 c).
    double sum = 0;
    for (uint32_t c : counts) {
      if (c > 1) sum += c * FastLog2(c);
    }
    bits += plane.size() * FastLog2(plane.size()) - sum;
  }
  return static_cast<size_t>(bits / 8);
}

}  // namespace trainwatch::storage::encoding
