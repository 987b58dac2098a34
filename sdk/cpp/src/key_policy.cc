#include "trainwatch/key_policy.h"

#include "tls_policy.h"

namespace trainwatch {

std::string KeyInClearRefusal(const std::string& server_url, const std::string& api_key) {
  Status s = sdk::CheckKeyNotInClear(api_key, sdk::IsHttpsUrl(server_url),
                                     sdk::HostOfUrl(server_url), server_url);
  return s.ok() ? "" : s.message();
}

}  // namespace trainwatch
