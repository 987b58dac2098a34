#include "cluster/nats_status.h"

#include <string>

namespace trainwatch::cluster {

Status FromNats(natsStatus s, std::string_view what, jsErrCode js_error) {
  if (s == NATS_OK) return Status::Ok();
  std::string message = std::string(what) + ": " + natsStatus_GetText(s);
  if (js_error != 0)
    message += " (JetStream error " + std::to_string(static_cast<int>(js_error)) + ")";
  // The last error of this thread often says more than the status ("stream not found").
  natsStatus last = NATS_OK;
  if (const char* detail = nats_GetLastError(&last);
      detail != nullptr && *detail != '\0' && last == s) {
    message += ": ";
    message += detail;
  }
  switch (s) {
    case NATS_NO_SERVER:
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_NOT_YET_CONNECTED:
    case NATS_STALE_CONNECTION:
    case NATS_TIMEOUT:
    case NATS_NO_RESPONDERS:
    case NATS_IO_ERROR:
      return Status::Unavailable(std::move(message));
    case NATS_NOT_FOUND:
      return Status::NotFound(std::move(message));
    default:
      return Status::Internal(std::move(message));
  }
}

}  // namespace trainwatch::cluster
