#include "common/loopback.h"

#include "common/cidr.h"

namespace trainwatch {

bool IsLoopbackHost(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost") return true;
  static const CidrList kLoopback = CidrList::Parse("127.0.0.0/8,::1/128").value();
  return kLoopback.Contains(host);
}

}  // namespace trainwatch
