#include "storage/encoding/float_column.h"

#include <bit>
#include <cstring>
#include <vector>

#include "storage/encoding/byte_stream_split.h"
#include "storage/encoding/float_bits.h"
#include "storage/encoding/gorilla.h"
#include "storage/encoding/int_column.h"

namespace trainwatch::storage::encoding {
namespace {

bool AllBitsEqual(std::span<const double> values) {
  const auto first = std::bit_cast<uint64_t>(values[0]);
  for (double v : values) {
    if (std::bit_cast<uint64_t>(v) != first) return false;
  }
  return true;
}

// Fills *ints with the decimal mantissas of every value at `digits`; false if one has none.
bool AllDecimal(std::span<const double> values, int digits, std::vector<int64_t>* ints) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!DoubleToDecimal(values[i], digits, &(*ints)[i])) return false;
  }
  return true;
}

bool AllFloat32(std::span<const double> values, std::vector<uint32_t>* patterns) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!DoubleToFloat32Pattern(values[i], &(*patterns)[i])) return false;
  }
  return true;
}

Status Corrupt(std::string_view encoding, const std::string& why) {
  return Status::Corruption(std::string(encoding) + ": " + why);
}

Status CheckSize(ColumnEncoding encoding, std::string_view raw, size_t expected) {
  if (raw.size() == expected) return Status::Ok();
  return Corrupt(ColumnEncodingName(encoding), "payload is " + std::to_string(raw.size()) +
                                                   " bytes, expected " + std::to_string(expected));
}

}  // namespace

EncodedColumn EncodeFloatColumn(std::span<const double> values, int zstd_level) {
  const size_t n = values.size();
  CandidatePicker picker(zstd_level);
  if (AllBitsEqual(values)) {
    std::string raw(sizeof(double), '\0');
    std::memcpy(raw.data(), &values[0], sizeof(double));
    picker.Offer(ColumnEncoding::kConstant, std::move(raw));
    return picker.Take();
  }
  std::vector<int64_t> ints(n);
  for (int digits = 0; digits <= kMaxDecimalDigits; ++digits) {
    if (AllDecimal(values, digits, &ints)) {
      OfferIntColumn(ints, ColumnEncoding::kDecimal, std::string(1, static_cast<char>(digits)),
                     &picker);
      return picker.Take();
    }
  }
  std::vector<uint32_t> patterns32(n);
  if (AllFloat32(values, &patterns32)) {
    picker.Offer(ColumnEncoding::kFloat32Gorilla, GorillaEncode32(patterns32));
    ints.assign(patterns32.begin(), patterns32.end());
    OfferIntColumn(ints, ColumnEncoding::kFloat32Bits, "", &picker);
    picker.OfferWithZstd(ColumnEncoding::kFloat32Split, ByteStreamSplit(patterns32.data(), n, 4),
                         4);
    return picker.Take();
  }
  std::vector<uint64_t> patterns64(n);
  for (size_t i = 0; i < n; ++i) patterns64[i] = std::bit_cast<uint64_t>(values[i]);
  picker.Offer(ColumnEncoding::kFloat64Gorilla, GorillaEncode64(patterns64));
  for (size_t i = 0; i < n; ++i) ints[i] = static_cast<int64_t>(patterns64[i]);
  OfferIntColumn(ints, ColumnEncoding::kFloat64Bits, "", &picker);
  picker.OfferWithZstd(ColumnEncoding::kFloat64Split, ByteStreamSplit(patterns64.data(), n, 8), 8);
  return picker.Take();
}

Status DecodeFloatColumn(ColumnEncoding encoding, std::string_view raw, uint32_t count,
                         double* out) {
  const std::string_view name = ColumnEncodingName(encoding);
  std::vector<int64_t> ints;
  std::vector<uint32_t> patterns32;
  std::vector<uint64_t> patterns64;
  switch (encoding) {
    case ColumnEncoding::kConstant: {
      TW_RETURN_IF_ERROR(CheckSize(encoding, raw, sizeof(double)));
      double v;
      std::memcpy(&v, raw.data(), sizeof(double));
      for (uint32_t i = 0; i < count; ++i) out[i] = v;
      return Status::Ok();
    }
    case ColumnEncoding::kDecimal: {
      if (raw.empty()) return Corrupt(name, "missing digit count");
      const int digits = static_cast<unsigned char>(raw[0]);
      if (digits > kMaxDecimalDigits) {
        return Corrupt(name, "digit count " + std::to_string(digits) + " > 9");
      }
      ints.resize(count);
      TW_RETURN_IF_ERROR(DecodeIntColumn(raw.substr(1), count, ints.data()).WithContext(name));
      for (uint32_t i = 0; i < count; ++i) out[i] = DecimalToDouble(ints[i], digits);
      return Status::Ok();
    }
    case ColumnEncoding::kFloat32Split:
      TW_RETURN_IF_ERROR(CheckSize(encoding, raw, size_t{4} * count));
      patterns32.resize(count);
      ByteStreamJoin(raw, count, 4, patterns32.data());
      break;
    case ColumnEncoding::kFloat32Gorilla:
      patterns32.resize(count);
      TW_RETURN_IF_ERROR(GorillaDecode32(raw, count, patterns32.data()).WithContext(name));
      break;
    case ColumnEncoding::kFloat32Bits:
      ints.resize(count);
      TW_RETURN_IF_ERROR(DecodeIntColumn(raw, count, ints.data()).WithContext(name));
      patterns32.resize(count);
      for (uint32_t i = 0; i < count; ++i) {
        if (ints[i] < 0 || ints[i] > int64_t{UINT32_MAX}) {
          return Corrupt(name, "value " + std::to_string(i) + " is not a 32-bit pattern");
        }
        patterns32[i] = static_cast<uint32_t>(ints[i]);
      }
      break;
    case ColumnEncoding::kFloat64Split:
      TW_RETURN_IF_ERROR(CheckSize(encoding, raw, size_t{8} * count));
      ByteStreamJoin(raw, count, 8, out);
      return Status::Ok();
    case ColumnEncoding::kFloat64Gorilla:
      patterns64.resize(count);
      TW_RETURN_IF_ERROR(GorillaDecode64(raw, count, patterns64.data()).WithContext(name));
      for (uint32_t i = 0; i < count; ++i) out[i] = std::bit_cast<double>(patterns64[i]);
      return Status::Ok();
    case ColumnEncoding::kFloat64Bits:
      ints.resize(count);
      TW_RETURN_IF_ERROR(DecodeIntColumn(raw, count, ints.data()).WithContext(name));
      for (uint32_t i = 0; i < count; ++i) out[i] = std::bit_cast<double>(ints[i]);
      return Status::Ok();
    default:
      return Status::Corruption("encoding " + std::to_string(static_cast<int>(encoding)) +
                                " is not a float encoding");
  }
  for (uint32_t i = 0; i < count; ++i) out[i] = Float32PatternToDouble(patterns32[i]);
  return Status::Ok();
}

std::string DescribeFloatColumn(ColumnEncoding encoding, std::string_view raw) {
  std::string name(ColumnEncodingName(encoding));
  switch (encoding) {
    case ColumnEncoding::kDecimal:
      if (raw.empty()) return name + "?";
      return name + std::to_string(static_cast<unsigned char>(raw[0])) + "." +
             DescribeIntColumn(raw.substr(1));
    case ColumnEncoding::kFloat32Bits:
    case ColumnEncoding::kFloat64Bits:
      return name + "." + DescribeIntColumn(raw);
    default:
      return name;
  }
}

}  // namespace trainwatch::storage::encoding
