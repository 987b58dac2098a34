// A protocol-buffer wire-format reader over a byte view: no generated classes, no copies.
//
//   WireReader r(bytes);
//   while (r.Next()) {
//     switch (r.field()) {
//       case 1: r.ReadDouble(&wall_time); break;
//       default: r.Skip();
//     }
//   }
//   if (!r.ok()) ... r.error() ...
//
// A field whose wire type is not the one the caller expects is skipped by the typed readers (they
// return false without an error), so that a writer's schema change never derails the decoder.
// Repeated numeric fields may come packed (one length-delimited field) or unpacked (one field per
// value); the Append* helpers accept both. Not thread-safe; the bytes must outlive the reader.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace trainwatch::tfevents {

enum class WireType : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kBytes = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5
};

class WireReader {
 public:
  explicit WireReader(std::string_view bytes)
      : p_(reinterpret_cast<const uint8_t*>(bytes.data())), end_(p_ + bytes.size()) {}

  // Reads the next field's key. False at the end of the bytes, or on malformed bytes (ok() false).
  bool Next() {
    if (p_ == end_ || error_) return false;
    uint64_t key;
    if (!Varint(&key)) return Fail("truncated field key");
    field_ = static_cast<uint32_t>(key >> 3);
    type_ = static_cast<WireType>(key & 7);
    if (field_ == 0) return Fail("field number 0");
    return true;
  }

  uint32_t field() const { return field_; }
  WireType type() const { return type_; }
  bool ok() const { return error_ == nullptr; }
  const char* error() const { return error_; }

  // Typed reads of the current field. Each returns true when the value was read; false when the
  // wire type differs (the field is then skipped) or the bytes are malformed (ok() false).
  bool ReadVarint(uint64_t* v) {
    if (type_ != WireType::kVarint) return SkipMismatch();
    return Varint(v) || Fail("truncated varint");
  }
  bool ReadInt64(int64_t* v) {
    uint64_t u;
    if (!ReadVarint(&u)) return false;
    *v = static_cast<int64_t>(u);
    return true;
  }
  bool ReadInt32(int32_t* v) {
    uint64_t u;
    if (!ReadVarint(&u)) return false;
    *v = static_cast<int32_t>(u);  // negative int32 values are sign-extended to 64 bits on the wire
    return true;
  }
  bool ReadBool(bool* v) {
    uint64_t u;
    if (!ReadVarint(&u)) return false;
    *v = u != 0;
    return true;
  }
  bool ReadDouble(double* v) {
    if (type_ != WireType::kFixed64) return SkipMismatch();
    if (end_ - p_ < 8) return Fail("truncated fixed64");
    std::memcpy(v, p_, 8);
    p_ += 8;
    return true;
  }
  bool ReadFloat(float* v) {
    if (type_ != WireType::kFixed32) return SkipMismatch();
    if (end_ - p_ < 4) return Fail("truncated fixed32");
    std::memcpy(v, p_, 4);
    p_ += 4;
    return true;
  }
  bool ReadBytes(std::string_view* v) {
    if (type_ != WireType::kBytes) return SkipMismatch();
    uint64_t n;
    if (!Varint(&n)) return Fail("truncated length");
    if (n > static_cast<uint64_t>(end_ - p_))
      return Fail("length-delimited field runs past its message");
    *v = std::string_view(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return true;
  }

  // Repeated numeric fields, packed or not: appends this field's value(s) to *out.
  bool AppendDoubles(std::vector<double>* out) {
    return AppendFixed<double, WireType::kFixed64>(out);
  }
  bool AppendFloats(std::vector<float>* out) { return AppendFixed<float, WireType::kFixed32>(out); }
  bool AppendVarints(std::vector<uint64_t>* out) {
    if (type_ == WireType::kVarint) {
      uint64_t v;
      if (!ReadVarint(&v)) return false;
      out->push_back(v);
      return true;
    }
    std::string_view packed;
    if (!ReadBytes(&packed)) return false;
    WireReader inner(packed);
    while (inner.p_ != inner.end_) {
      uint64_t v;
      if (!inner.Varint(&v)) return Fail("truncated packed varint");
      out->push_back(v);
    }
    return true;
  }

  // Skips the current field's value.
  bool Skip() {
    switch (type_) {
      case WireType::kVarint: {
        uint64_t v;
        return Varint(&v) || Fail("truncated varint");
      }
      case WireType::kFixed64:
        if (end_ - p_ < 8) return Fail("truncated fixed64");
        p_ += 8;
        return true;
      case WireType::kFixed32:
        if (end_ - p_ < 4) return Fail("truncated fixed32");
        p_ += 4;
        return true;
      case WireType::kBytes: {
        uint64_t n;
        if (!Varint(&n)) return Fail("truncated length");
        if (n > static_cast<uint64_t>(end_ - p_))
          return Fail("length-delimited field runs past its message");
        p_ += n;
        return true;
      }
      case WireType::kStartGroup:
      case WireType::kEndGroup:
        return Fail("groups are not supported");
    }
    return Fail("unknown wire type");
  }

 private:
  bool Varint(uint64_t* v) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64 && p_ != end_; shift += 7) {
      const uint8_t b = *p_++;
      result |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (b < 0x80) {
        *v = result;
        return true;
      }
    }
    return false;
  }

  template <typename T, WireType kType>
  bool AppendFixed(std::vector<T>* out) {
    if (type_ == kType) {
      if (end_ - p_ < static_cast<ptrdiff_t>(sizeof(T))) return Fail("truncated fixed-width value");
      T v;
      std::memcpy(&v, p_, sizeof(T));
      p_ += sizeof(T);
      out->push_back(v);
      return true;
    }
    std::string_view packed;
    if (!ReadBytes(&packed)) return false;
    if (packed.size() % sizeof(T) != 0)
      return Fail("packed fixed-width field of a size that is not a multiple of its element");
    const size_t n = packed.size() / sizeof(T);
    if (n == 0) return true;  // (memcpy into an empty vector's null data() is undefined)
    const size_t old = out->size();
    out->resize(old + n);
    std::memcpy(out->data() + old, packed.data(), packed.size());
    return true;
  }

  // A wire type other than the caller expects: skip the value and report "not read".
  bool SkipMismatch() {
    Skip();
    return false;
  }
  bool Fail(const char* why) {
    if (!error_) error_ = why;
    p_ = end_;
    return false;
  }

  const uint8_t* p_;
  const uint8_t* end_;
  uint32_t field_ = 0;
  WireType type_ = WireType::kVarint;
  const char* error_ = nullptr;
};

}  // namespace trainwatch::tfevents
