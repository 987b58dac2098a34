#include "ingest/json_scanner.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "common/strings.h"

namespace trainwatch::ingest {
namespace {

constexpr int kMaxDepth = 64;

}  // namespace

void JsonScanner::SkipSpace() {
  while (pos_ < text_.size() &&
         (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\r' || text_[pos_] == '\n')) {
    ++pos_;
  }
}

bool JsonScanner::Fail(std::string message) {
  if (error_.empty()) error_ = std::move(message) + " at byte " + std::to_string(pos_);
  return false;
}

char JsonScanner::PeekChar() {
  SkipSpace();
  return pos_ < text_.size() ? text_[pos_] : '\0';
}

bool JsonScanner::AtEnd() {
  SkipSpace();
  return pos_ == text_.size();
}

char JsonScanner::PeekKind() {
  SkipSpace();
  if (pos_ >= text_.size()) return '?';
  char c = text_[pos_];
  if (c == '{' || c == '[' || c == '"' || c == 't' || c == 'f') return c;
  if (c == 'n') return 'l';  // null
  if (c == '-' || (c >= '0' && c <= '9') || c == 'N' || c == 'I') return 'n';
  return '?';
}

bool JsonScanner::ExpectChar(char c) {
  SkipSpace();
  if (pos_ >= text_.size()) return Fail(std::string("expected '") + c + "' but the line ended");
  if (text_[pos_] != c) {
    return Fail(std::string("expected '") + c + "', found '" + text_[pos_] + "'");
  }
  ++pos_;
  return true;
}

bool JsonScanner::NextKey(std::string* key, bool* done, bool first) {
  SkipSpace();
  if (pos_ >= text_.size()) return Fail("unterminated object");
  if (text_[pos_] == '}') {
    ++pos_;
    *done = true;
    return true;
  }
  *done = false;
  if (!first && !ExpectChar(',')) return false;
  if (!ReadString(key)) return false;
  return ExpectChar(':');
}

bool JsonScanner::AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return true;
}

bool JsonScanner::ReadString(std::string* out) {
  out->clear();
  SkipSpace();
  if (pos_ >= text_.size() || text_[pos_] != '"') return Fail("expected a string");
  ++pos_;
  size_t run_start = pos_;
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == '"') {
      out->append(text_.substr(run_start, pos_ - run_start));
      ++pos_;
      if (!IsValidUtf8(*out)) return Fail("string is not valid UTF-8");
      return true;
    }
    if (static_cast<unsigned char>(c) < 0x20) return Fail("control character in string");
    if (c != '\\') {
      ++pos_;
      continue;
    }
    out->append(text_.substr(run_start, pos_ - run_start));
    if (++pos_ >= text_.size()) break;
    char e = text_[pos_++];
    switch (e) {
      case '"': out->push_back('"'); break;
      case '\\': out->push_back('\\'); break;
      case '/': out->push_back('/'); break;
      case 'b': out->push_back('\b'); break;
      case 'f': out->push_back('\f'); break;
      case 'n': out->push_back('\n'); break;
      case 'r': out->push_back('\r'); break;
      case 't': out->push_back('\t'); break;
      case 'u': {
        auto read_hex4 = [&](uint32_t* v) {
          if (pos_ + 4 > text_.size()) return false;
          *v = 0;
          for (int k = 0; k < 4; ++k) {
            int h = HexDigitValue(text_[pos_ + k]);
            if (h < 0) return false;
            *v = (*v << 4) | h;
          }
          pos_ += 4;
          return true;
        };
        uint32_t cp;
        if (!read_hex4(&cp)) return Fail("bad \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t low;
          if (pos_ + 2 > text_.size() || text_[pos_] != '\\' || text_[pos_ + 1] != 'u') {
            return Fail("unpaired surrogate in \\u escape");
          }
          pos_ += 2;
          if (!read_hex4(&low) || low < 0xDC00 || low > 0xDFFF) {
            return Fail("unpaired surrogate in \\u escape");
          }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return Fail("unpaired surrogate in \\u escape");
        }
        AppendUtf8(cp, out);
        break;
      }
      default: return Fail(std::string("bad escape '\\") + e + "'");
    }
    run_start = pos_;
  }
  return Fail("unterminated string");
}

bool JsonScanner::ReadLiteral(std::string_view word) {
  if (text_.substr(pos_, word.size()) != word) return false;
  pos_ += word.size();
  return true;
}

bool JsonScanner::ReadNumber(double* value, bool* is_integer, int64_t* integer) {
  SkipSpace();
  *is_integer = false;
  if (ReadLiteral("NaN")) {
    *value = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (ReadLiteral("Infinity")) {
    *value = std::numeric_limits<double>::infinity();
    return true;
  }
  if (ReadLiteral("-Infinity")) {
    *value = -std::numeric_limits<double>::infinity();
    return true;
  }
  // Validate the JSON number grammar, then convert.
  size_t start = pos_, p = pos_;
  const size_t n = text_.size();
  bool plain_integer = true;
  if (p < n && text_[p] == '-') ++p;
  if (p >= n || !(text_[p] >= '0' && text_[p] <= '9')) return Fail("expected a number");
  if (text_[p] == '0') {
    ++p;
  } else {
    while (p < n && text_[p] >= '0' && text_[p] <= '9') ++p;
  }
  if (p < n && text_[p] == '.') {
    plain_integer = false;
    ++p;
    if (p >= n || !(text_[p] >= '0' && text_[p] <= '9')) return Fail("expected digits after '.'");
    while (p < n && text_[p] >= '0' && text_[p] <= '9') ++p;
  }
  if (p < n && (text_[p] == 'e' || text_[p] == 'E')) {
    plain_integer = false;
    ++p;
    if (p < n && (text_[p] == '+' || text_[p] == '-')) ++p;
    if (p >= n || !(text_[p] >= '0' && text_[p] <= '9')) return Fail("expected digits in exponent");
    while (p < n && text_[p] >= '0' && text_[p] <= '9') ++p;
  }
  const char* first = text_.data() + start;
  const char* last = text_.data() + p;
  auto [ptr, ec] = std::from_chars(first, last, *value);
  if (ec == std::errc::result_out_of_range) {
    // Overflow to ±Inf is what every JSON reader does with 1e999; keep that, and 0 for underflow.
    *value = (*first == '-') ? -std::numeric_limits<double>::infinity()
                             : std::numeric_limits<double>::infinity();
    bool tiny = false;
    for (const char* q = first; q < last; ++q) {
      if (*q == 'e' || *q == 'E') {
        tiny = q + 1 < last && q[1] == '-';
        break;
      }
    }
    if (tiny) *value = (*first == '-') ? -0.0 : 0.0;
  } else if (ec != std::errc() || ptr != last) {
    return Fail("bad number");
  }
  if (plain_integer) {
    auto [iptr, iec] = std::from_chars(first, last, *integer);
    *is_integer = iec == std::errc() && iptr == last;
  }
  pos_ = p;
  return true;
}

bool JsonScanner::SkipValue(std::string_view* raw, int depth) {
  if (depth > kMaxDepth) return Fail("nesting too deep");
  char kind = PeekKind();
  size_t start = pos_;
  std::string scratch;
  switch (kind) {
    case '{': {
      ++pos_;
      bool done = false;
      for (bool first = true;; first = false) {
        if (!NextKey(&scratch, &done, first)) return false;
        if (done) break;
        std::string_view ignored;
        if (!SkipValue(&ignored, depth + 1)) return false;
      }
      break;
    }
    case '[': {
      ++pos_;
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        break;
      }
      for (;;) {
        std::string_view ignored;
        if (!SkipValue(&ignored, depth + 1)) return false;
        SkipSpace();
        if (pos_ < text_.size() && text_[pos_] == ']') {
          ++pos_;
          break;
        }
        if (!ExpectChar(',')) return false;
      }
      break;
    }
    case '"':
      if (!ReadString(&scratch)) return false;
      break;
    case 'n': {
      double v;
      bool is_int;
      int64_t i;
      if (!ReadNumber(&v, &is_int, &i)) return false;
      break;
    }
    case 't':
      if (!ReadLiteral("true")) return Fail("bad literal");
      break;
    case 'f':
      if (!ReadLiteral("false")) return Fail("bad literal");
      break;
    case 'l':
      if (!ReadLiteral("null")) return Fail("bad literal");
      break;
    default:
      return Fail(pos_ >= text_.size() ? "expected a value but the line ended" : "expected a value");
  }
  *raw = text_.substr(start, pos_ - start);
  return true;
}

}  // namespace trainwatch::ingest
