#include "tfevents/tensor.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "tfevents/wire_reader.h"

namespace trainwatch::tfevents {
namespace {

Status DecodeShape(std::string_view bytes, TensorView* t) {
  WireReader r(bytes);
  while (r.Next()) {
    if (r.field() == 2) {  // TensorShapeProto.dim
      std::string_view dim;
      if (!r.ReadBytes(&dim)) continue;
      if (t->rank == kMaxTensorRank)
        return Status::InvalidArgument("tensor rank over " + std::to_string(kMaxTensorRank));
      int64_t size = 0;
      WireReader d(dim);
      while (d.Next()) {
        if (d.field() == 1) {  // Dim.size
          d.ReadInt64(&size);
        } else {
          d.Skip();
        }
      }
      if (!d.ok()) return Status::InvalidArgument(std::string("tensor_shape.dim: ") + d.error());
      t->dims[t->rank++] = size;
    } else if (r.field() == 3) {  // unknown_rank
      bool unknown = false;
      if (r.ReadBool(&unknown) && unknown) return Status::InvalidArgument("tensor of unknown rank");
    } else {
      r.Skip();
    }
  }
  if (!r.ok()) return Status::InvalidArgument(std::string("tensor_shape: ") + r.error());
  return Status::Ok();
}

size_t ElementBytes(int type) {
  switch (type) {
    case dtype::kDouble:
    case dtype::kInt64:
    case dtype::kUint64:
      return 8;
    case dtype::kFloat:
    case dtype::kInt32:
    case dtype::kUint32:
      return 4;
    case dtype::kHalf:
    case dtype::kBfloat16:
    case dtype::kInt16:
    case dtype::kUint16:
      return 2;
    case dtype::kInt8:
    case dtype::kUint8:
    case dtype::kBool:
      return 1;
    default:
      return 0;
  }
}

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

double FromContent(int type, const char* p) {
  switch (type) {
    case dtype::kDouble:
      return Load<double>(p);
    case dtype::kFloat:
      return Load<float>(p);
    case dtype::kHalf:
      return HalfToFloat(Load<uint16_t>(p));
    case dtype::kBfloat16:
      return Bfloat16ToFloat(Load<uint16_t>(p));
    case dtype::kInt64:
      return static_cast<double>(Load<int64_t>(p));
    case dtype::kUint64:
      return static_cast<double>(Load<uint64_t>(p));
    case dtype::kInt32:
      return Load<int32_t>(p);
    case dtype::kUint32:
      return Load<uint32_t>(p);
    case dtype::kInt16:
      return Load<int16_t>(p);
    case dtype::kUint16:
      return Load<uint16_t>(p);
    case dtype::kInt8:
      return Load<int8_t>(p);
    case dtype::kUint8:
      return Load<uint8_t>(p);
    case dtype::kBool:
      return *p != 0 ? 1 : 0;
    default:
      return NAN;
  }
}

// The typed repeated field that carries `type`, as doubles appended to *out.
bool FromRepeated(const TensorView& t, std::vector<double>* out) {
  switch (t.dtype) {
    case dtype::kFloat:
      out->assign(t.float_val.begin(), t.float_val.end());
      return true;
    case dtype::kDouble:
      out->assign(t.double_val.begin(), t.double_val.end());
      return true;
    case dtype::kHalf:
    case dtype::kBfloat16:
      out->clear();
      for (uint64_t bits : t.half_val) {
        const auto b = static_cast<uint16_t>(bits);
        out->push_back(t.dtype == dtype::kHalf ? HalfToFloat(b) : Bfloat16ToFloat(b));
      }
      return true;
    case dtype::kInt32:
    case dtype::kInt16:
    case dtype::kInt8:
    case dtype::kUint16:
    case dtype::kUint8:
      out->clear();
      for (uint64_t v : t.int_val) out->push_back(static_cast<int32_t>(v));
      return true;
    case dtype::kInt64:
      out->clear();
      for (uint64_t v : t.int64_val) out->push_back(static_cast<double>(static_cast<int64_t>(v)));
      return true;
    case dtype::kUint32:
      out->clear();
      for (uint64_t v : t.uint32_val) out->push_back(static_cast<double>(static_cast<uint32_t>(v)));
      return true;
    case dtype::kUint64:
      out->clear();
      for (uint64_t v : t.uint64_val) out->push_back(static_cast<double>(v));
      return true;
    case dtype::kBool:
      out->clear();
      for (uint64_t v : t.bool_val) out->push_back(v != 0 ? 1 : 0);
      return true;
    default:
      return false;
  }
}

// A shape filled from one repeated value may claim any size; the bytes bound everything else.
constexpr int64_t kMaxFilledElements = 1 << 20;

Status TooLargeToFill(const TensorView& t) {
  return Status::InvalidArgument("tensor of shape " + t.ShapeString() +
                                 " is too large to fill from one value");
}

}  // namespace

std::string DtypeName(int type) {
  switch (type) {
    case dtype::kFloat:
      return "DT_FLOAT";
    case dtype::kDouble:
      return "DT_DOUBLE";
    case dtype::kInt32:
      return "DT_INT32";
    case dtype::kUint8:
      return "DT_UINT8";
    case dtype::kInt16:
      return "DT_INT16";
    case dtype::kInt8:
      return "DT_INT8";
    case dtype::kString:
      return "DT_STRING";
    case dtype::kInt64:
      return "DT_INT64";
    case dtype::kBool:
      return "DT_BOOL";
    case dtype::kBfloat16:
      return "DT_BFLOAT16";
    case dtype::kUint16:
      return "DT_UINT16";
    case dtype::kHalf:
      return "DT_HALF";
    case dtype::kUint32:
      return "DT_UINT32";
    case dtype::kUint64:
      return "DT_UINT64";
    default:
      return "dtype " + std::to_string(type);
  }
}

Status TensorView::Decode(std::string_view bytes) {
  dtype = 0;
  rank = 0;
  content = {};
  float_val.clear();
  double_val.clear();
  int_val.clear();
  int64_val.clear();
  half_val.clear();
  bool_val.clear();
  uint32_val.clear();
  uint64_val.clear();
  string_val.clear();
  WireReader r(bytes);
  while (r.Next()) {
    switch (r.field()) {
      case 1: {
        int32_t v;
        if (r.ReadInt32(&v)) dtype = v;
        break;
      }
      case 2: {
        std::string_view shape;
        if (r.ReadBytes(&shape)) TW_RETURN_IF_ERROR(DecodeShape(shape, this));
        break;
      }
      case 4:
        r.ReadBytes(&content);
        break;
      case 5:
        r.AppendFloats(&float_val);
        break;
      case 6:
        r.AppendDoubles(&double_val);
        break;
      case 7:
        r.AppendVarints(&int_val);
        break;
      case 8: {
        std::string_view s;
        if (r.ReadBytes(&s)) string_val.push_back(s);
        break;
      }
      case 10:
        r.AppendVarints(&int64_val);
        break;
      case 11:
        r.AppendVarints(&bool_val);
        break;
      case 13:
        r.AppendVarints(&half_val);
        break;
      case 16:
        r.AppendVarints(&uint32_val);
        break;
      case 17:
        r.AppendVarints(&uint64_val);
        break;
      default:
        r.Skip();
    }
  }
  if (!r.ok()) return Status::InvalidArgument(std::string("tensor: ") + r.error());
  return Status::Ok();
}

Result<int64_t> TensorView::NumElements() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) {
    if (dims[i] < 0)
      return Status::InvalidArgument("tensor shape " + ShapeString() + " has an unknown dimension");
    if (dims[i] != 0 && n > (int64_t{1} << 40) / dims[i])
      return Status::InvalidArgument("tensor shape " + ShapeString() + " is too large");
    n *= dims[i];
  }
  return n;
}

std::string TensorView::ShapeString() const {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

Status NumericValues(const TensorView& t, std::vector<double>* out) {
  TW_ASSIGN_OR_RETURN(int64_t n, t.NumElements());
  const size_t width = ElementBytes(t.dtype);
  if (width == 0)
    return Status::InvalidArgument("expected a numeric tensor, got " + DtypeName(t.dtype));
  if (!t.content.empty()) {
    if (t.content.size() != static_cast<uint64_t>(n) * width) {
      return Status::InvalidArgument("tensor_content holds " + std::to_string(t.content.size()) +
                                     " bytes, shape " + t.ShapeString() + " of " +
                                     DtypeName(t.dtype) + " needs " + std::to_string(n * width));
    }
    out->resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) (*out)[i] = FromContent(t.dtype, t.content.data() + i * width);
    return Status::Ok();
  }
  FromRepeated(t, out);
  if (out->size() == 1 && n > 1) {  // version-0 fill rule
    if (n > kMaxFilledElements) return TooLargeToFill(t);
    out->resize(static_cast<size_t>(n), out->front());
  }
  if (out->size() != static_cast<size_t>(n)) {
    return Status::InvalidArgument("tensor of shape " + t.ShapeString() + " holds " +
                                   std::to_string(out->size()) + " " + DtypeName(t.dtype) +
                                   " values");
  }
  return Status::Ok();
}

Result<double> TensorScalar(const TensorView& t, std::vector<double>* scratch) {
  if (t.rank != 0)
    return Status::InvalidArgument("scalar tensor of shape " + t.ShapeString() +
                                   ", expected rank 0");
  // The common encodings first, without the general path's vector.
  if (t.dtype == dtype::kFloat && t.content.empty() && t.float_val.size() == 1)
    return double{t.float_val[0]};
  if (t.dtype == dtype::kFloat && t.content.size() == 4)
    return double{Load<float>(t.content.data())};
  if (t.dtype == dtype::kDouble && t.content.empty() && t.double_val.size() == 1)
    return t.double_val[0];
  if (t.dtype == dtype::kDouble && t.content.size() == 8) return Load<double>(t.content.data());
  if (t.dtype == dtype::kString) return Status::InvalidArgument("scalar tensor of DT_STRING");
  TW_RETURN_IF_ERROR(NumericValues(t, scratch));
  return scratch->front();
}

Status StringValues(const TensorView& t, std::vector<std::string_view>* out) {
  if (t.dtype != dtype::kString)
    return Status::InvalidArgument("expected a DT_STRING tensor, got " + DtypeName(t.dtype));
  TW_ASSIGN_OR_RETURN(int64_t n, t.NumElements());
  out->clear();
  if (t.content.empty()) {
    out->assign(t.string_val.begin(), t.string_val.end());
    if (out->size() == 1 && n > 1) {
      if (n > kMaxFilledElements) return TooLargeToFill(t);
      out->resize(static_cast<size_t>(n), out->front());
    }
  } else {
    // Every length first, then the strings back to back.
    std::vector<uint64_t> sizes;
    const auto* p = reinterpret_cast<const uint8_t*>(t.content.data());
    const auto* end = p + t.content.size();
    for (int64_t i = 0; i < n; ++i) {
      uint64_t len = 0;
      int shift = 0;
      while (true) {
        if (p == end || shift > 35)
          return Status::InvalidArgument("tensor_content: truncated string length");
        const uint8_t b = *p++;
        len |= static_cast<uint64_t>(b & 0x7f) << shift;
        shift += 7;
        if (b < 0x80) break;
      }
      sizes.push_back(len);
    }
    for (uint64_t len : sizes) {
      if (len > static_cast<uint64_t>(end - p))
        return Status::InvalidArgument("tensor_content: string runs past the tensor");
      out->emplace_back(reinterpret_cast<const char*>(p), len);
      p += len;
    }
  }
  if (out->size() != static_cast<size_t>(n)) {
    return Status::InvalidArgument("string tensor of shape " + t.ShapeString() + " holds " +
                                   std::to_string(out->size()) + " strings");
  }
  return Status::Ok();
}

float HalfToFloat(uint16_t bits) {
  const uint32_t sign = (bits >> 15) & 1;
  const uint32_t exponent = (bits >> 10) & 0x1f;
  const uint32_t mantissa = bits & 0x3ff;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // subnormal
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), static_cast<int>(exponent) - 25);
  }
  return sign ? -magnitude : magnitude;
}

float Bfloat16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

}  // namespace trainwatch::tfevents
