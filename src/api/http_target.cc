#include "api/http_target.h"

#include "common/strings.h"

namespace trainwatch::api {

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int hi = HexDigitValue(s[i + 1]);
      int lo = HexDigitValue(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_is_space && s[i] == '+' ? ' ' : s[i]);
  }
  return out;
}

std::multimap<std::string, std::string> ParseQueryString(std::string_view query) {
  std::multimap<std::string, std::string> out;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query.remove_prefix(amp == std::string_view::npos ? query.size() : amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string key = PercentDecode(pair.substr(0, eq), true);
    std::string value =
        eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1), true);
    out.emplace(std::move(key), std::move(value));
  }
  return out;
}

RequestTarget ParseTarget(std::string_view target) {
  RequestTarget out;
  size_t q = target.find('?');
  out.path = PercentDecode(target.substr(0, q), false);
  if (q == std::string_view::npos) return out;
  out.query = ParseQueryString(target.substr(q + 1));
  return out;
}

}  // namespace trainwatch::api
