// The SDK's rule for API keys, for other programs that talk to a trainwatch server (the
// `trainwatch` command line): an API key never travels in clear text to another machine.
#pragma once

#include <string>

namespace trainwatch {

// Empty when `api_key` may be sent to `server_url`: no key, an https:// URL, or a loopback host
// (127.0.0.0/8, ::1, localhost). Otherwise the reason it may not, naming the server and saying to
// use https://; the Client refuses such a link the same way (ClientOptions::api_key).
std::string KeyInClearRefusal(const std::string& server_url, const std::string& api_key);

}  // namespace trainwatch
