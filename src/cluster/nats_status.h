// natsStatus (libnats) to trainwatch Status, with the reason libnats gives.
#pragma once

#include <nats/nats.h>

#include <string_view>

#include "common/status.h"

namespace trainwatch::cluster {

// `what` names the operation ("publish to tw.ingest.p3"). NATS being unreachable or slow
// (no server, closed connection, timeout, no responders) is Unavailable: the caller retries;
// NATS_NOT_FOUND is NotFound; the rest is Internal. The JetStream error code, when there is one,
// is part of the message.
Status FromNats(natsStatus s, std::string_view what,
                jsErrCode js_error = static_cast<jsErrCode>(0));

}  // namespace trainwatch::cluster
