#include "import_options.h"

#include <cstdio>
#include <cstdlib>

#include "import_export_http.h"

namespace trainwatch::tools {

void AddServerFlags(FlagSet* set, ServerFlags* flags, bool with_project) {
  if (with_project)
    set->Add(StringFlag("--project", "P", "the project (default: " + flags->project + ")",
                        &flags->project));
  Flag server =
      StringFlag("--server", "URL",
                 "the server's HTTP(S) URL" +
                     (flags->server.empty() ? std::string() : " (default: " + flags->server + ")"),
                 &flags->server);
  server.env = "TRAINWATCH_SERVER";
  set->Add(std::move(server));
  Flag api_key = StringFlag("--api-key", "KEY", "the API key the server asks for", &flags->api_key);
  api_key.env = "TRAINWATCH_API_KEY";
  set->Add(std::move(api_key));
  Flag tls_ca = StringFlag(
      "--tls-ca", "FILE",
      "PEM CA bundle that signed an https:// server's certificate\n(default: the system's CAs)",
      &flags->tls_ca_file);
  tls_ca.env = "TRAINWATCH_TLS_CA";
  set->Add(std::move(tls_ca));
}

ClientOptions ReplayClientOptions(const ServerFlags& flags,
                                  std::function<void(WarningKind, const std::string&)> on_warning) {
  ClientOptions options;
  options.server = flags.server;
  options.api_key = flags.api_key;
  options.tls_ca_file = flags.tls_ca_file;
  options.heartbeat_interval_seconds = 0;
  options.overflow = OverflowPolicy::kBlock;
  options.memory_max_bytes = 256ull << 20;
  options.buffer_records = 1 << 18;
  options.on_warning = std::move(on_warning);
  return options;
}

RunOptions ReplayRunOptions(const ServerFlags& flags, const std::string& run_id, bool resume) {
  RunOptions options;
  options.project = flags.project;
  options.id = run_id;
  options.name = run_id;
  options.resume = resume;
  options.system_metrics_interval_seconds = 0;  // the machine running the import is not the run's
  return options;
}

Status CheckServer(const ServerFlags& flags) {
  HttpClient http(flags.server, flags.api_key, flags.tls_ca_file);
  Result<HttpReply> reply = http.Get("/api/v1/info", 10);
  if (!reply.ok())
    return Status::Unavailable("cannot reach the trainwatch server: " + reply.status().message());
  if (reply->status == 401 || reply->status == 403) {
    return Status::InvalidArgument(flags.server + " refused the API key" +
                                   (flags.api_key.empty() ? " (none was given: --api-key)" : ""));
  }
  if (reply->status != 200) {
    return Status::Unavailable(flags.server + "/api/v1/info answered HTTP " +
                               std::to_string(reply->status) + ": is it a trainwatch server?");
  }
  return Status::Ok();
}

std::string FormatBytes(double bytes) {
  char buf[32];
  if (bytes >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  } else if (bytes >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f kB", bytes / 1e3);
  }
  return buf;
}

std::string Count(uint64_t n, std::string_view noun) {
  std::string out = std::to_string(n) + " " + std::string(noun);
  if (n != 1) out += "s";
  return out;
}

std::string FormatCounts(const ImportCounts& c) {
  std::string out = Count(c.files, "file") + ", " + FormatBytes(static_cast<double>(c.bytes)) +
                    ", " + Count(c.records, "record") + ": " + Count(c.points, "point") + ", " +
                    Count(c.histograms, "histogram") + ", " + Count(c.images, "image") + ", " +
                    Count(c.texts, "text") + ", " + Count(c.graphs, "graph");
  if (c.session_starts) out += "; " + Count(c.session_starts, "session restart");
  if (c.steps_back) out += "; " + Count(c.steps_back, "tag whose step went back") + " (purged)";
  if (c.rewinds_failed) out += " (" + std::to_string(c.rewinds_failed) + " not rewound)";
  if (c.corrupt)
    out += "; " + Count(c.corrupt, "corrupt record") + " skipped (" +
           Count(c.corrupt_bytes, "byte") + ")";
  if (c.bad_events) out += "; " + Count(c.bad_events, "undecodable event");
  if (c.value_errors) out += "; " + Count(c.value_errors, "malformed value");
  for (const auto& [what, n] : c.skipped)
    out += "; not imported: " + std::to_string(n) + " x " + what;
  return out;
}

}  // namespace trainwatch::tools
