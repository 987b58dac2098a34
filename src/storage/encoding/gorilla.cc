#include "storage/encoding/gorilla.h"

#include <bit>

#include "storage/encoding/bit_stream.h"

namespace trainwatch::storage::encoding {
namespace {

// kBits-wide patterns; leading-zero counts and lengths take kFieldBits bits each.
template <typename T>
struct Traits;
template <>
struct Traits<uint32_t> {
  static constexpr int kBits = 32;
  static constexpr int kFieldBits = 5;
};
template <>
struct Traits<uint64_t> {
  static constexpr int kBits = 64;
  static constexpr int kFieldBits = 6;
};

template <typename T>
std::string Encode(std::span<const T> patterns) {
  constexpr int kBits = Traits<T>::kBits;
  constexpr int kFieldBits = Traits<T>::kFieldBits;
  BitWriter bits;
  bits.Reserve(patterns.size() * (kBits / 2));
  bits.Write(patterns[0], kBits);
  int window_lead = -1;  // no window yet
  int window_trail = 0;
  for (size_t i = 1; i < patterns.size(); ++i) {
    const T x = patterns[i] ^ patterns[i - 1];
    if (x == 0) {
      bits.Write(0, 1);
      continue;
    }
    const int lead = std::countl_zero(x);
    const int trail = std::countr_zero(x);
    if (window_lead >= 0 && lead >= window_lead && trail >= window_trail) {
      bits.Write(0b01, 2);  // control bits 1, 0: reuse the window
      bits.Write(x >> window_trail, kBits - window_lead - window_trail);
    } else {
      const int length = kBits - lead - trail;
      bits.Write(0b11, 2);  // control bits 1, 1: new window
      bits.Write(lead, kFieldBits);
      bits.Write(length - 1, kFieldBits);
      bits.Write(x >> trail, length);
      window_lead = lead;
      window_trail = trail;
    }
  }
  return bits.Finish();
}

template <typename T>
Status Decode(std::string_view payload, uint32_t count, T* out) {
  constexpr int kBits = Traits<T>::kBits;
  constexpr int kFieldBits = Traits<T>::kFieldBits;
  const auto corrupt = [](const std::string& why, size_t i) {
    return Status::Corruption("gorilla: " + why + " at value " + std::to_string(i));
  };
  BitReader bits(payload);
  uint64_t v = 0;
  if (count == 0) return Status::Corruption("gorilla: zero values");
  if (!bits.Read(kBits, &v)) return corrupt("payload ends", 0);
  out[0] = static_cast<T>(v);
  int window_lead = -1;
  int window_trail = 0;
  for (size_t i = 1; i < count; ++i) {
    uint64_t control = 0;
    if (!bits.Read(1, &control)) return corrupt("payload ends", i);
    if (control == 0) {
      out[i] = out[i - 1];
      continue;
    }
    if (!bits.Read(1, &control)) return corrupt("payload ends", i);
    if (control == 1) {
      uint64_t lead = 0;
      uint64_t length = 0;
      if (!bits.Read(kFieldBits, &lead) || !bits.Read(kFieldBits, &length)) {
        return corrupt("payload ends", i);
      }
      ++length;
      if (lead + length > kBits) return corrupt("window past the value's width", i);
      window_lead = static_cast<int>(lead);
      window_trail = kBits - static_cast<int>(lead + length);
    } else if (window_lead < 0) {
      return corrupt("window reused before one was set", i);
    }
    uint64_t meaningful = 0;
    if (!bits.Read(kBits - window_lead - window_trail, &meaningful)) {
      return corrupt("payload ends", i);
    }
    const T x = static_cast<T>(meaningful << window_trail);
    if (x == 0) return corrupt("zero XOR in a window", i);
    out[i] = out[i - 1] ^ x;
  }
  if (!bits.AtPaddedEnd()) return Status::Corruption("gorilla: trailing bits after the last value");
  return Status::Ok();
}

}  // namespace

std::string GorillaEncode32(std::span<const uint32_t> patterns) { return Encode(patterns); }
std::string GorillaEncode64(std::span<const uint64_t> patterns) { return Encode(patterns); }

Status GorillaDecode32(std::string_view payload, uint32_t count, uint32_t* out) {
  return Decode(payload, count, out);
}
Status GorillaDecode64(std::string_view payload, uint32_t count, uint64_t* out) {
  return Decode(payload, count, out);
}

}  // namespace trainwatch::storage::encoding
