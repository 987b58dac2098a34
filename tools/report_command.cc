#include "report_command.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "flags.h"
#include "import_export_http.h"
#include "import_options.h"
#include "report/pdf.h"

namespace trainwatch::tools {
namespace {

constexpr const char* kReportDescription =
    "Writes the run's training report, one self-contained file (no network needed to open it):\n"
    "summary, where the time went, the main charts with exact min/max envelopes, the alerts with\n"
    "their evidence, the config and its diff against the --compare runs, system and GPU use.\n"
    "The server builds it (GET /api/v1/report); an --out ending in .pdf is printed here by\n"
    "headless Chromium. RUN is PROJECT/RUN, or a run id of --project.\n";

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The server's {"error": ...}, else the body.
std::string ErrorOf(const HttpReply& reply) {
  nlohmann::json j = nlohmann::json::parse(reply.body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_string()) return j["error"];
  return reply.body.substr(0, 500);
}

// Writes next to `path` and renames over it: a reader never sees half a report.
Status WriteFileAtomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << bytes;
    if (!out.flush()) return Status::IoError("cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status::IoError("cannot rename " + tmp + " to " + path + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

int ReportCommand(const std::vector<std::string>& args) {
  ServerFlags server;
  std::string target, out;
  std::vector<std::string> compare;
  std::string chromium;
  FlagSet set("report", kReportDescription);
  set.AddPositional("PROJECT/RUN", &target);
  set.Add(ListFlag("--compare", "RUN",
                   "a run of the same project to compare with (repeatable, at most 7)", &compare));
  set.Add(StringFlag("--out", "FILE",
                     "where to write it: FILE.html or FILE.pdf\n(default: report-<run>.html)",
                     &out));
  set.Add(StringFlag("--chromium", "PATH",
                     "the Chromium that prints PDFs (default: $TRAINWATCH_CHROMIUM, else\n"
                     "/usr/bin/chromium)",
                     &chromium));
  AddServerFlags(&set, &server, /*with_project=*/true);
  if (auto exit_code = ParseCommandLine(set, args)) return *exit_code;

  std::string project = server.project, run = target;
  if (const size_t slash = target.find('/'); slash != std::string::npos) {
    project = target.substr(0, slash);
    run = target.substr(slash + 1);
  }
  if (project.empty() || run.empty()) {
    std::fprintf(stderr, "trainwatch report: PROJECT/RUN: '%s' names no %s\n%s", target.c_str(),
                 project.empty() ? "project" : "run", set.Usage().c_str());
    return 2;
  }
  if (out.empty()) {
    out = "report-";
    for (char c : run)
      out.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_');
    out += ".html";
  }
  const bool pdf = EndsWith(out, ".pdf");
  if (!pdf && !EndsWith(out, ".html") && !EndsWith(out, ".htm")) {
    std::fprintf(stderr, "trainwatch report: --out: '%s' must end in .html or .pdf\n%s",
                 out.c_str(), set.Usage().c_str());
    return 2;
  }
  std::optional<std::string> printer;
  if (pdf) {
    printer = chromium.empty() ? report::FindChromium() : std::optional<std::string>(chromium);
    if (!printer) {
      std::fprintf(stderr,
                   "trainwatch report: --out %s: no Chromium to print the PDF with (install "
                   "Debian's chromium, or pass --chromium PATH); write .html instead\n",
                   out.c_str());
      return 1;
    }
  }

  std::string path = "/api/v1/report?project=" + UrlEncode(project) + "&run=" + UrlEncode(run);
  for (const std::string& c : compare) path += "&compare=" + UrlEncode(c);
  HttpClient http(server.server, server.api_key, server.tls_ca_file);
  Result<HttpReply> reply = http.Get(path, 600);
  if (!reply.ok()) {
    std::fprintf(stderr, "trainwatch report: %s\n", reply.status().message().c_str());
    return 1;
  }
  if (reply->status != 200) {
    std::fprintf(stderr, "trainwatch report: the server answered %ld: %s\n", reply->status,
                 ErrorOf(*reply).c_str());
    return 1;
  }
  std::string bytes = std::move(reply->body);
  if (pdf) {
    Result<std::string> printed = report::PrintPdf(*printer, bytes);
    if (!printed.ok()) {
      std::fprintf(stderr, "trainwatch report: %s\n", printed.status().message().c_str());
      return 1;
    }
    bytes = std::move(printed).value();
  }
  if (Status s = WriteFileAtomically(out, bytes); !s.ok()) {
    std::fprintf(stderr, "trainwatch report: --out: %s\n", s.message().c_str());
    return 1;
  }
  std::printf("wrote %s (%s)\n", out.c_str(),
              FormatBytes(static_cast<double>(bytes.size())).c_str());
  return 0;
}

}  // namespace trainwatch::tools
