#include "tls_policy.h"

#include <cctype>

#include "common/loopback.h"

namespace trainwatch::sdk {

bool IsHttpsUrl(std::string_view url) {
  constexpr std::string_view kScheme = "https://";
  if (url.size() < kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(url[i])) != kScheme[i]) return false;
  }
  return true;
}

std::string HostOfUrl(std::string_view url) {
  size_t start = url.find("://");
  start = start == std::string_view::npos ? 0 : start + 3;
  size_t end = url.find_first_of("/?#", start);
  std::string_view authority = url.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
  size_t at = authority.rfind('@');
  if (at != std::string_view::npos) authority = authority.substr(at + 1);
  if (!authority.empty() && authority[0] == '[') return std::string(authority.substr(0, authority.find(']') + 1));
  return std::string(authority.substr(0, authority.find(':')));
}

std::string HostOfTarget(std::string_view target) {
  if (target.starts_with("unix:") || target.starts_with("unix-abstract:")) return "localhost";
  if (target.starts_with("dns:")) {
    target.remove_prefix(4);
    if (target.starts_with("//")) {  // dns://authority/host:port: the part after the authority
      size_t slash = target.find('/', 2);
      target = slash == std::string_view::npos ? std::string_view() : target.substr(slash + 1);
    }
  } else if (target.starts_with("ipv4:") || target.starts_with("ipv6:")) {
    target.remove_prefix(5);
    target = target.substr(0, target.find(','));
  }
  if (!target.empty() && target[0] == '[') return std::string(target.substr(0, target.find(']') + 1));
  size_t colon = target.rfind(':');
  if (colon != std::string_view::npos && target.find(':') == colon) target = target.substr(0, colon);
  return std::string(target);  // no port, or a bare IPv6 address
}

Status CheckKeyNotInClear(const std::string& api_key, bool encrypted, std::string_view host,
                          std::string_view destination) {
  if (api_key.empty() || encrypted || IsLoopbackHost(host)) return Status::Ok();
  return Status::PermissionDenied("refusing to send the API key in clear text to " + std::string(destination) +
                                  " (not this machine): use an https:// server URL, with the server started "
                                  "with --tls-cert and --tls-key");
}

}  // namespace trainwatch::sdk
