// JsonScanner (src/ingest/json_scanner.h), the pull parser under every JSON line a client writes,
// and IsValidUtf8.
//
// Checks, besides memory safety: SkipValue's raw text is the prefix it consumed; a text that
// nlohmann::json accepts as strict JSON (and that nests no deeper than the scanner's bound) is
// accepted too; IsValidUtf8 agrees with a reference decoder written from RFC 3629; a string the
// scanner returns is valid UTF-8.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "ingest/json_scanner.h"

namespace {

using trainwatch::ingest::IsValidUtf8;
using trainwatch::ingest::JsonScanner;

// RFC 3629, table-driven the other way round from the scanner's decoder.
bool ReferenceUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
    auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) {
      return i + k < s.size() && b(k) >= lo && b(k) <= hi;
    };
    unsigned c = b(0);
    if (c <= 0x7F) {
      i += 1;
    } else if (c >= 0xC2 && c <= 0xDF && cont(1)) {
      i += 2;
    } else if (c == 0xE0 && cont(1, 0xA0) && cont(2)) {
      i += 3;
    } else if (((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) && cont(1) && cont(2)) {
      i += 3;
    } else if (c == 0xED && cont(1, 0x80, 0x9F) && cont(2)) {
      i += 3;
    } else if (c == 0xF0 && cont(1, 0x90) && cont(2) && cont(3)) {
      i += 4;
    } else if (c >= 0xF1 && c <= 0xF3 && cont(1) && cont(2) && cont(3)) {
      i += 4;
    } else if (c == 0xF4 && cont(1, 0x80, 0x8F) && cont(2) && cont(3)) {
      i += 4;
    } else {
      return false;
    }
  }
  return true;
}

// Brackets outside strings, at their deepest (an approximation good enough to stay clear of the
// scanner's depth bound: it ignores escapes, so it can only overestimate).
int MaxBracketDepth(std::string_view s) {
  int depth = 0, max = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max = std::max(max, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max;
}

// Walks one value with the typed readers, as the line parser does.
void Walk(JsonScanner& s, int depth) {
  if (depth > 8) return;
  std::string text;
  switch (s.PeekKind()) {
    case '{': {
      if (!s.ExpectChar('{')) return;
      bool done = false;
      for (bool first = true;; first = false) {
        if (!s.NextKey(&text, &done, first) || done) return;
        FUZZ_CHECK(IsValidUtf8(text), text);
        Walk(s, depth + 1);
        if (!s.error().empty()) return;
      }
    }
    case '[': {
      if (!s.ExpectChar('[')) return;
      if (s.PeekChar() == ']') {
        (void)s.ExpectChar(']');
        return;
      }
      for (;;) {
        Walk(s, depth + 1);
        if (!s.error().empty()) return;
        if (s.PeekChar() == ']') {
          (void)s.ExpectChar(']');
          return;
        }
        if (!s.ExpectChar(',')) return;
      }
    }
    case '"':
      if (s.ReadString(&text)) FUZZ_CHECK(IsValidUtf8(text), text);
      return;
    case 'n': {
      double v;
      bool is_int;
      int64_t i;
      if (s.ReadNumber(&v, &is_int, &i) && is_int) FUZZ_CHECK(static_cast<double>(i) == v, "integer and value differ");
      return;
    }
    default: {
      std::string_view raw;
      (void)s.SkipValue(&raw);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  FUZZ_CHECK(IsValidUtf8(text) == ReferenceUtf8(text), "IsValidUtf8 disagrees with RFC 3629");

  JsonScanner skip(text);
  std::string_view raw;
  const bool skipped = skip.SkipValue(&raw);
  if (skipped) {
    FUZZ_CHECK(trainwatch::fuzz::ViewWithin(raw, text), "raw value outside the input");
    FUZZ_CHECK(raw.data() + raw.size() == text.data() + skip.offset(), "raw value does not end at offset()");
  } else {
    FUZZ_CHECK(!skip.error().empty(), "SkipValue failed without an error");
  }
  FUZZ_CHECK(skip.offset() <= text.size(), "offset past the end");

  // (nlohmann skips a leading byte order mark and ends the text at a NUL byte; the scanner, rightly
  // for JSON lines, does neither.)
  if (!text.starts_with("\xEF\xBB\xBF") && text.find('\0') == text.npos && MaxBracketDepth(text) < 60 && nlohmann::json::accept(text)) {
    FUZZ_CHECK(skipped && skip.AtEnd(), "strict JSON refused: " + skip.error());
  }

  JsonScanner walk(text);
  Walk(walk, 0);
  FUZZ_CHECK(walk.offset() <= text.size(), "offset past the end");
  return 0;
}
