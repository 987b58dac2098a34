#include "api/server_info.h"

#include "common/loopback.h"

namespace trainwatch::api {

std::string AdvertisedGrpcAddress(const ServerInfo& info, std::string_view remote) {
  const size_t colon = info.grpc_address.rfind(':');
  if (colon == std::string::npos) return info.grpc_address;
  const std::string_view host = std::string_view(info.grpc_address).substr(0, colon);
  if (IsLoopbackHost(host) && !IsLoopbackHost(remote)) return "";
  return info.grpc_address;
}

}  // namespace trainwatch::api
