// `trainwatch report PROJECT/RUN [--compare RUN ...] [--out FILE]`: a run's training report
// (docs/reports.md), fetched from the server's GET /api/v1/report; an --out ending in .pdf is
// printed here by headless Chromium.
#pragma once

#include <string>
#include <vector>

namespace trainwatch::tools {

// argv after "report"; returns the process exit code.
int ReportCommand(const std::vector<std::string>& args);

}  // namespace trainwatch::tools
