// Parsing an HTTP request target ("/path?a=1&b=%20x") into a decoded path and query parameters.
// The bytes come from the network: any input is accepted, and malformed escapes are kept as sent.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace trainwatch::api {

// Decodes %XX escapes (a '%' not followed by two hex digits is kept); with `plus_is_space`, '+' is
// a space (query strings).
std::string PercentDecode(std::string_view s, bool plus_is_space);

struct RequestTarget {
  std::string path;                               // percent-decoded, without the query
  std::multimap<std::string, std::string> query;  // decoded; a name without '=' has an empty value
};

RequestTarget ParseTarget(std::string_view target);

// "a=1&b=%20x" (a query string, or an application/x-www-form-urlencoded body) into decoded pairs.
std::multimap<std::string, std::string> ParseQueryString(std::string_view query);

}  // namespace trainwatch::api
