// JsonScanner: a small pull parser for one JSON text, strict except that it accepts the bare tokens
// NaN, Infinity and -Infinity as numbers (what Python's json module writes). Every failure says what
// was expected and at which byte. Never reads past the input; nesting depth is bounded.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/utf8.h"

namespace trainwatch::ingest {

class JsonScanner {
 public:
  explicit JsonScanner(std::string_view text) : text_(text) {}

  // Each returns false and sets error() on failure.
  bool ExpectChar(char c);
  // After '{' or ',' inside an object: reads `"key":`. Sets *done when the object closes instead.
  bool NextKey(std::string* key, bool* done, bool first);
  bool ReadString(std::string* out);
  // A number (or NaN/Infinity/-Infinity); *is_integer is true for a plain integer literal that fits
  // in int64, whose value is then in *integer.
  bool ReadNumber(double* value, bool* is_integer, int64_t* integer);
  // Skips one value of any type, returning its raw text.
  bool SkipValue(std::string_view* raw, int depth = 0);
  // The type of the next value: one of  { [ " n(umber) t f l(null) ?  (after whitespace).
  char PeekKind();
  // The next non-space character, or '\0' at the end.
  char PeekChar();
  bool AtEnd();  // only whitespace left

  const std::string& error() const { return error_; }
  size_t offset() const { return pos_; }

 private:
  void SkipSpace();
  bool Fail(std::string message);
  bool ReadLiteral(std::string_view word);
  bool AppendUtf8(uint32_t code_point, std::string* out);

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
};

// True if `s` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
using ::trainwatch::IsValidUtf8;

}  // namespace trainwatch::ingest
