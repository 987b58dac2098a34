// Small string helpers shared by parsers (durations, rule expressions, HTTP headers) and by the
// places that write hex digests and URLs.
#pragma once

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace trainwatch {

// `s` without leading and trailing spaces and tabs.
inline std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The items of a `sep`-separated list ("a, b,,c"), each without surrounding blanks; empty ones
// are dropped. The views point into `text`.
inline std::vector<std::string_view> SplitList(std::string_view text, char sep = ',') {
  std::vector<std::string_view> items;
  while (!text.empty()) {
    size_t at = text.find(sep);
    std::string_view item = TrimBlanks(text.substr(0, at));
    text.remove_prefix(at == std::string_view::npos ? text.size() : at + 1);
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

// ASCII case-insensitive equality.
inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// `s` in ASCII lower case.
inline std::string ToLowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Equality whose time depends only on the lengths, not on where the first difference is: for
// comparing secrets.
inline bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// The value of one hex digit (either case), or -1.
inline int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Lower-case hex of raw bytes (digests, signatures).
inline std::string LowerHex(std::string_view raw) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(raw.size() * 2);
  for (unsigned char c : raw) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

// Percent-encodes everything but RFC 3986's unreserved characters (a query value or path segment).
inline std::string UrlEncode(std::string_view s) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kDigits[c >> 4]);
      out.push_back(kDigits[c & 15]);
    }
  }
  return out;
}

}  // namespace trainwatch
