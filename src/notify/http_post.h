// One HTTP POST over libcurl, with the error classification every HTTP notifier shares.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace trainwatch::notify {

struct HttpPost {
  std::string url;
  std::string body;
  std::vector<std::string> headers;  // "Name: value"; Content-Type is the caller's to set
  double timeout_seconds = 5;        // the whole exchange, connecting included
};

// Sends `post` once (redirects are not followed; the proxy variables of the environment apply, as
// everywhere in libcurl). Returns OK for a 2xx
// reply; Unavailable when no reply came (connect error, timeout) or for 5xx, 408 and 429;
// InvalidArgument for any other status (its code and the start of the reply body in the message)
// and for a URL curl cannot use. Thread-safe: each call uses its own curl handle.
Status PerformHttpPost(const HttpPost& post);

// Initialises libcurl once per process (curl_global_init is not thread-safe); every user of curl
// in this library calls it before curl_easy_init.
void EnsureCurlInitialized();

}  // namespace trainwatch::notify
