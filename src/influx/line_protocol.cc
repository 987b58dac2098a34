#include "influx/line_protocol.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace trainwatch::influx {
namespace {

// One line, left to right; a refused line's reason is worded as InfluxDB's parser words it.
class LineParser {
 public:
  LineParser(std::string_view line, int64_t scale, std::deque<std::string>& storage)
      : line_(line), scale_(scale), storage_(storage) {}

  // The point, or the reason the line is refused.
  Result<Point> Parse() {
    Point p;
    TW_RETURN_IF_ERROR(Measurement(&p.measurement));
    while (pos_ < line_.size() && line_[pos_] == ',') {
      ++pos_;
      std::string_view key, value;
      TW_RETURN_IF_ERROR(Name(kTagKey, &key));
      if (key.empty()) return Fail("missing tag key");
      if (pos_ >= line_.size() || line_[pos_] != '=') return Fail("missing tag value");
      ++pos_;
      TW_RETURN_IF_ERROR(Name(kTagValue, &value));
      if (value.empty()) return Fail("missing tag value");
      p.tags.emplace_back(key, value);
    }
    if (pos_ < line_.size() && line_[pos_] != ' ' && line_[pos_] != '\t')
      return Fail("invalid tag format");
    if (!SkipSpaces()) return Fail("missing fields");
    TW_RETURN_IF_ERROR(Fields(&p));
    if (SkipSpaces()) {
      int64_t t = 0;
      TW_RETURN_IF_ERROR(Timestamp(&t));
      p.timestamp_ns = t;
      if (SkipSpaces()) return Fail("invalid timestamp: more after it");
    }
    return p;
  }

 private:
  // What ends a name, and what a backslash escapes in it.
  enum NameKind { kMeasurement, kTagKey, kTagValue, kFieldKey };

  Status Fail(std::string_view reason) const {
    return Status::InvalidArgument(std::string(reason));
  }

  bool Ends(NameKind kind, char c) const {
    if (c == ' ' || c == '\t') return true;
    if (c == ',') return true;
    return c == '=' && kind != kMeasurement;
  }

  // Reads a name up to its unescaped end; unescapes into storage_ only when it held escapes.
  Status Name(NameKind kind, std::string_view* out) {
    const size_t start = pos_;
    bool escaped = false;
    while (pos_ < line_.size() && !Ends(kind, line_[pos_])) {
      if (line_[pos_] == '\\' && pos_ + 1 < line_.size()) {
        escaped = true;
        ++pos_;
      }
      ++pos_;
    }
    *out = line_.substr(start, pos_ - start);
    if (escaped) *out = Unescape(*out, kind == kMeasurement ? ", " : ",= ");
    return Status::Ok();
  }

  // Drops the backslash before each of `escapable`; other backslashes stay (InfluxDB's rule).
  std::string_view Unescape(std::string_view text, std::string_view escapable) {
    std::string& out = storage_.emplace_back();
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\\' && i + 1 < text.size() &&
          escapable.find(text[i + 1]) != std::string_view::npos) {
        ++i;
      }
      out.push_back(text[i]);
    }
    return out;
  }

  Status Measurement(std::string_view* out) {
    TW_RETURN_IF_ERROR(Name(kMeasurement, out));
    if (out->empty()) return Fail("missing measurement");
    return Status::Ok();
  }

  // Skips spaces; false when the line ended (or there were none to skip).
  bool SkipSpaces() {
    size_t before = pos_;
    while (pos_ < line_.size() && (line_[pos_] == ' ' || line_[pos_] == '\t')) ++pos_;
    return pos_ > before && pos_ < line_.size();
  }

  Status Fields(Point* p) {
    while (true) {
      std::string_view key;
      TW_RETURN_IF_ERROR(Name(kFieldKey, &key));
      if (key.empty()) return Fail("missing field key");
      if (pos_ >= line_.size() || line_[pos_] != '=') return Fail("missing field value");
      ++pos_;
      FieldValue value;
      TW_RETURN_IF_ERROR(Value(&value));
      bool replaced = false;
      for (auto& [k, v] : p->fields) {
        if (k == key) {
          v = value;
          replaced = true;
        }
      }
      if (!replaced) p->fields.emplace_back(key, value);
      if (pos_ < line_.size() && line_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < line_.size() && line_[pos_] != ' ' && line_[pos_] != '\t') {
        return Fail("invalid field format");
      }
      return Status::Ok();
    }
  }

  Status Value(FieldValue* v) {
    if (pos_ >= line_.size() || line_[pos_] == ' ' || line_[pos_] == '\t' || line_[pos_] == ',') {
      return Fail("missing field value");
    }
    if (line_[pos_] == '"') return String(v);
    const size_t start = pos_;
    while (pos_ < line_.size() && line_[pos_] != ',' && line_[pos_] != ' ' && line_[pos_] != '\t')
      ++pos_;
    const std::string_view text = line_.substr(start, pos_ - start);
    if (Boolean(text, &v->b)) {
      v->type = FieldValue::Type::kBoolean;
      return Status::Ok();
    }
    if (text.front() == 't' || text.front() == 'T' || text.front() == 'f' || text.front() == 'F') {
      return Fail("invalid boolean");
    }
    const char last = text.back();
    if (last == 'i' || last == 'u') {
      const std::string_view digits = text.substr(0, text.size() - 1);
      const char* end = digits.data() + digits.size();
      std::from_chars_result r{};
      if (last == 'i') {
        v->type = FieldValue::Type::kInteger;
        r = std::from_chars(digits.data(), end, v->i);
      } else {
        v->type = FieldValue::Type::kUnsigned;
        if (!digits.empty() && digits.front() == '-')
          return Fail("invalid unsigned number: negative");
        r = std::from_chars(digits.data(), end, v->u);
      }
      if (digits.empty() || r.ptr != end) return Fail("invalid number");
      if (r.ec == std::errc::result_out_of_range) return Fail("value out of range");
      return Status::Ok();
    }
    v->type = FieldValue::Type::kFloat;
    // InfluxDB floats: digits with an optional sign, point and exponent; no NaN or infinity.
    const char* end = text.data() + text.size();
    const char* begin = text.data() + (text.front() == '+' ? 1 : 0);
    auto r = std::from_chars(begin, end, v->f);
    if (r.ptr != end || r.ec == std::errc::invalid_argument || std::isnan(v->f) ||
        std::isinf(v->f)) {
      return Fail("invalid number");
    }
    if (r.ec == std::errc::result_out_of_range) return Fail("value out of range");
    return Status::Ok();
  }

  static bool Boolean(std::string_view text, bool* b) {
    for (std::string_view t : {"t", "T", "true", "True", "TRUE"}) {
      if (text == t) return *b = true;
    }
    for (std::string_view f : {"f", "F", "false", "False", "FALSE"}) {
      if (text == f) {
        *b = false;
        return true;
      }
    }
    return false;
  }

  // A double-quoted string: \" and \\ are escapes; the closing quote must be followed by the end
  // of the field.
  Status String(FieldValue* v) {
    const size_t start = ++pos_;
    bool escaped = false;
    while (pos_ < line_.size() && line_[pos_] != '"') {
      if (line_[pos_] == '\\' && pos_ + 1 < line_.size()) {
        escaped = true;
        ++pos_;
      }
      ++pos_;
    }
    if (pos_ >= line_.size()) return Fail("unbalanced quotes");
    v->type = FieldValue::Type::kString;
    v->s = line_.substr(start, pos_ - start);
    if (escaped) v->s = Unescape(v->s, "\"\\");
    ++pos_;  // the closing quote
    return Status::Ok();
  }

  Status Timestamp(int64_t* ns) {
    const size_t start = pos_;
    while (pos_ < line_.size() && line_[pos_] != ' ' && line_[pos_] != '\t') ++pos_;
    const std::string_view text = line_.substr(start, pos_ - start);
    int64_t t = 0;
    auto r = std::from_chars(text.data(), text.data() + text.size(), t);
    if (r.ptr != text.data() + text.size() || r.ec != std::errc()) return Fail("bad timestamp");
    if (t > std::numeric_limits<int64_t>::max() / scale_ ||
        t < std::numeric_limits<int64_t>::min() / scale_) {
      return Fail("time outside range");
    }
    *ns = t * scale_;
    return Status::Ok();
  }

  std::string_view line_;
  const int64_t scale_;
  std::deque<std::string>& storage_;
  size_t pos_ = 0;
};

int64_t NanosPer(Precision p) {
  switch (p) {
    case Precision::kNanoseconds:
      return 1;
    case Precision::kMicroseconds:
      return 1000;
    case Precision::kMilliseconds:
      return 1000 * 1000;
    case Precision::kSeconds:
      return 1000 * 1000 * 1000;
    case Precision::kMinutes:
      return 60LL * 1000 * 1000 * 1000;
    case Precision::kHours:
      return 3600LL * 1000 * 1000 * 1000;
  }
  return 1;
}

}  // namespace

Result<Precision> ParsePrecision(std::string_view text) {
  if (text.empty() || text == "n" || text == "ns") return Precision::kNanoseconds;
  if (text == "u" || text == "us" || text == "\xc2\xb5") return Precision::kMicroseconds;
  if (text == "ms") return Precision::kMilliseconds;
  if (text == "s") return Precision::kSeconds;
  if (text == "m") return Precision::kMinutes;
  if (text == "h") return Precision::kHours;
  return Status::InvalidArgument("invalid precision '" + std::string(text) +
                                 "': one of n, ns, u, us, ms, s, m, h");
}

ParsedBody ParseLineProtocol(std::string_view body, Precision precision) {
  ParsedBody out;
  const int64_t scale = NanosPer(precision);
  uint32_t number = 0;
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find('\n', start);
    if (end == std::string_view::npos) end = body.size();
    std::string_view line = body.substr(start, end - start);
    start = end + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;  // blank or a comment
    line.remove_prefix(first);
    Result<Point> point = LineParser(line, scale, out.storage).Parse();
    if (point.ok()) {
      point->line = number;
      out.points.push_back(std::move(*point));
    } else {
      out.errors.push_back(
          {number, "unable to parse '" + std::string(line) + "': " + point.status().message()});
    }
  }
  return out;
}

}  // namespace trainwatch::influx
