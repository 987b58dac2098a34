#include "api/server_info.h"

#include "api/json_writer.h"
#include "common/loopback.h"

namespace trainwatch::api {

std::string AdvertisedGrpcAddress(const ServerInfo& info, std::string_view remote) {
  const size_t colon = info.grpc_address.rfind(':');
  if (colon == std::string::npos) return info.grpc_address;
  const std::string_view host = std::string_view(info.grpc_address).substr(0, colon);
  if (IsLoopbackHost(host) && !IsLoopbackHost(remote)) return "";
  return info.grpc_address;
}

namespace {

void AppendStringOrNull(std::string* out, const std::string& s) {
  if (s.empty()) {
    *out += "null";
  } else {
    AppendString(out, s);
  }
}

}  // namespace

std::string ClusterInfoJson(const ClusterInfo& info) {
  std::string out = "{\"node\":";
  AppendString(&out, info.node);
  out += ",\"partitions\":";
  AppendInt(&out, info.partitions);
  out += ",\"members\":[";
  for (size_t i = 0; i < info.members.size(); ++i) {
    if (i > 0) out += ',';
    AppendString(&out, info.members[i]);
  }
  out += "],\"owned_partitions\":[";
  for (size_t i = 0; i < info.owned.size(); ++i) {
    if (i > 0) out += ',';
    AppendInt(&out, info.owned[i]);
  }
  out += "],\"owners\":[";
  for (size_t i = 0; i < info.owners.size(); ++i) {
    if (i > 0) out += ',';
    AppendStringOrNull(&out, info.owners[i]);
  }
  out += "],\"stream\":";
  AppendString(&out, info.stream);
  out += ",\"stream_leader\":";
  AppendStringOrNull(&out, info.stream_leader);
  out += ",\"stream_last_sequence\":";
  AppendInt(&out, static_cast<int64_t>(info.stream_last_sequence));
  out += ",\"applied_sequence\":";
  AppendInt(&out, static_cast<int64_t>(info.applied_sequence));
  out += ",\"consumer_lag\":";
  const uint64_t lag = info.stream_last_sequence > info.applied_sequence
                           ? info.stream_last_sequence - info.applied_sequence
                           : 0;
  AppendInt(&out, static_cast<int64_t>(lag));
  out += info.nats_connected ? ",\"nats_connected\":true" : ",\"nats_connected\":false";
  out += ",\"refreshed_at\":";
  if (info.refreshed_unix > 0) {
    AppendNumber(&out, info.refreshed_unix, NonFinite::kStrings);
  } else {
    out += "null";
  }
  return out + "}";
}

}  // namespace trainwatch::api
