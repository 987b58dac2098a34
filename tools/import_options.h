// Flags and client settings shared by the commands that talk to a server (`trainwatch import`,
// `watch`, `export`, `sync`, `keys`, `audit`).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "flags.h"
#include "import_run_sink.h"
#include "trainwatch/client.h"

namespace trainwatch::tools {

struct ServerFlags {
  std::string project = "default";
  std::string server = "http://127.0.0.1:8080";  // $TRAINWATCH_SERVER when set
  std::string api_key;                           // $TRAINWATCH_API_KEY when set
  std::string tls_ca_file;  // --tls-ca: CA of an https:// server; $TRAINWATCH_TLS_CA when set
};

// Adds the flags of the server a command talks to: --server, --api-key and --tls-ca, whose
// defaults are $TRAINWATCH_SERVER, $TRAINWATCH_API_KEY and $TRAINWATCH_TLS_CA when set, else what
// *flags holds (the usage shows it); --project too when `with_project`.
void AddServerFlags(FlagSet* set, ServerFlags* flags, bool with_project);

// SDK settings for replaying event files: no heartbeats (stopping `watch` must not mark runs
// crashed), Log() blocks rather than drop when the server falls behind, large in-memory queues
// (a file is read much faster than a server stores it), and no system metrics.
ClientOptions ReplayClientOptions(const ServerFlags& flags,
                                  std::function<void(WarningKind, const std::string&)> on_warning);
RunOptions ReplayRunOptions(const ServerFlags& flags, const std::string& run_id, bool resume);

// Asks the server for GET /api/v1/info before anything is sent: Unavailable (naming the URL) when
// it cannot be reached, InvalidArgument when it refuses the API key, so that a command fails at
// once instead of after its timeout.
Status CheckServer(const ServerFlags& flags);

// "1.23 GB" / "456.7 MB" / "12.3 kB".
std::string FormatBytes(double bytes);
// "1 point", "2 points".
std::string Count(uint64_t n, std::string_view noun);
// The counts as the one-paragraph summary the commands print.
std::string FormatCounts(const ImportCounts& c);

}  // namespace trainwatch::tools
