// The report as one self-contained HTML document: inline CSS and SVG, no script, no font, no
// request of any kind (it opens offline and prints to PDF as it is). docs/reports.md lists its
// sections; each is a <section data-section="..."> that starts a new page when printed.
#pragma once

#include <string>

#include "report/report.h"

namespace trainwatch::report {

std::string RenderReportHtml(const Report& report);

// "1h 02m 03s", "4.2 s".
std::string FormatDuration(double seconds);
// "2026-12-02 10:09:34 UTC"; "–" for 0.
std::string FormatTime(double unix_seconds);

}  // namespace trainwatch::report
