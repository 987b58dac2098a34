// Protocol-buffer wire-format encoding into a std::string: the writer side of wire_reader.h.
// Nested messages are encoded into their own string first and added with Bytes().
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "tfevents/wire_reader.h"

namespace trainwatch::tfevents {

class WireWriter {
 public:
  explicit WireWriter(std::string* out) : out_(*out) {}

  void Varint(uint32_t field, uint64_t v) {
    Key(field, WireType::kVarint);
    PutVarint(v);
  }
  void Int64(uint32_t field, int64_t v) { Varint(field, static_cast<uint64_t>(v)); }
  // Negative int32 values are sign-extended to ten bytes, as protobuf does.
  void Int32(uint32_t field, int32_t v) {
    Varint(field, static_cast<uint64_t>(static_cast<int64_t>(v)));
  }
  void Double(uint32_t field, double v) {
    Key(field, WireType::kFixed64);
    PutRaw(&v, 8);
  }
  void Float(uint32_t field, float v) {
    Key(field, WireType::kFixed32);
    PutRaw(&v, 4);
  }
  void Bytes(uint32_t field, std::string_view v) {
    Key(field, WireType::kBytes);
    PutVarint(v.size());
    out_.append(v);
  }
  void PackedDoubles(uint32_t field, std::span<const double> v) {
    if (v.empty()) return;
    Key(field, WireType::kBytes);
    PutVarint(v.size() * 8);
    PutRaw(v.data(), v.size() * 8);
  }
  void PackedFloats(uint32_t field, std::span<const float> v) {
    if (v.empty()) return;
    Key(field, WireType::kBytes);
    PutVarint(v.size() * 4);
    PutRaw(v.data(), v.size() * 4);
  }

 private:
  void Key(uint32_t field, WireType type) {
    PutVarint((static_cast<uint64_t>(field) << 3) | static_cast<uint8_t>(type));
  }
  void PutVarint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void PutRaw(const void* p, size_t n) {
    out_.append(static_cast<const char*>(p), n);
  }  // little-endian host

  std::string& out_;
};

}  // namespace trainwatch::tfevents
