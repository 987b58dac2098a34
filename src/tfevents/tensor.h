// TensorProto (tensor.proto) decoding for the tensors summaries carry: rank-0 numbers (scalars),
// [k, 3] numbers (histograms) and strings (images, text).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace trainwatch::tfevents {

// DataType values (types.proto) this decoder understands.
namespace dtype {
constexpr int kFloat = 1;
constexpr int kDouble = 2;
constexpr int kInt32 = 3;
constexpr int kUint8 = 4;
constexpr int kInt16 = 5;
constexpr int kInt8 = 6;
constexpr int kString = 7;
constexpr int kInt64 = 9;
constexpr int kBool = 10;
constexpr int kBfloat16 = 14;
constexpr int kUint16 = 17;
constexpr int kHalf = 19;
constexpr int kUint32 = 22;
constexpr int kUint64 = 23;
}  // namespace dtype

// "DT_FLOAT", ..., or "dtype 42".
std::string DtypeName(int dtype);

constexpr int kMaxTensorRank = 8;

// A decoded TensorProto. The views point into the bytes it was decoded from. Reuse one instance
// across calls to keep its vectors' capacity (Decode clears it first).
struct TensorView {
  int dtype = 0;
  int rank = 0;  // an absent shape is rank 0, as TensorFlow reads it
  int64_t dims[kMaxTensorRank] = {};
  std::string_view content;  // tensor_content: the raw little-endian elements
  std::vector<float> float_val;
  std::vector<double> double_val;
  std::vector<uint64_t> int_val;  // int32 and narrower integers
  std::vector<uint64_t> int64_val;
  std::vector<uint64_t> half_val;  // half and bfloat16 bit patterns in int32s
  std::vector<uint64_t> bool_val;
  std::vector<uint64_t> uint32_val;
  std::vector<uint64_t> uint64_val;
  std::vector<std::string_view> string_val;

  Status Decode(std::string_view tensor_proto);
  // Number of elements the shape describes; InvalidArgument for negative (unknown) dimensions.
  Result<int64_t> NumElements() const;
  // "[3, 2]".
  std::string ShapeString() const;
};

// Every element as a double, row-major, whichever representation carries them (tensor_content or
// the typed repeated field; a single repeated value fills the whole shape, TensorFlow's version-0
// rule). Numeric dtypes only; InvalidArgument names the dtype or the size mismatch.
Status NumericValues(const TensorView& t, std::vector<double>* out);

// The value of a rank-0 numeric tensor, exactly (float32 and narrower widen without rounding).
Result<double> TensorScalar(const TensorView& t, std::vector<double>* scratch);

// The elements of a DT_STRING tensor, from string_val or from tensor_content (TensorFlow's
// string-list encoding: every length as a varint, then every string's bytes).
Status StringValues(const TensorView& t, std::vector<std::string_view>* out);

// IEEE half and bfloat16 bit patterns to float (exact).
float HalfToFloat(uint16_t bits);
float Bfloat16ToFloat(uint16_t bits);

}  // namespace trainwatch::tfevents
