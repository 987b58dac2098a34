#include "import_options.h"

#include <cstdio>
#include <cstdlib>

#include "import_export_http.h"

namespace trainwatch::tools {

ServerFlags DefaultServerFlags() {
  ServerFlags flags;
  if (const char* s = std::getenv("TRAINWATCH_SERVER"); s && *s) flags.server = s;
  if (const char* k = std::getenv("TRAINWATCH_API_KEY"); k && *k) flags.api_key = k;
  if (const char* ca = std::getenv("TRAINWATCH_TLS_CA"); ca && *ca) flags.tls_ca_file = ca;
  return flags;
}

FlagParse ParseSharedFlag(const std::vector<std::string>& args, size_t* i, ServerFlags* flags,
                          std::string_view command, const char* usage, int* exit_code) {
  const std::string& a = args[*i];
  if (a == "--help" || a == "-h") {
    std::fputs(usage, stdout);
    *exit_code = 0;
    return FlagParse::kExit;
  }
  std::string* target = a == "--project"   ? &flags->project
                        : a == "--server"  ? &flags->server
                        : a == "--api-key" ? &flags->api_key
                        : a == "--tls-ca"  ? &flags->tls_ca_file
                                           : nullptr;
  if (!target) return FlagParse::kNotMine;
  if (*i + 1 >= args.size()) {
    std::fprintf(stderr, "trainwatch %.*s: %s needs a value\n%s", static_cast<int>(command.size()), command.data(),
                 a.c_str(), usage);
    *exit_code = 2;
    return FlagParse::kExit;
  }
  *target = args[++*i];
  return FlagParse::kConsumed;
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
