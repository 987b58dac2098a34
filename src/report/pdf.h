// Reports as PDF: the HTML report printed by Debian's headless Chromium (`--print-to-pdf`), the
// way `trainwatch report --out report.pdf` and GET /api/v1/report?format=pdf make them.
#pragma once

#include <optional>
#include <string>

#include "common/status.h"

namespace trainwatch::report {

// The Chromium to print with: $TRAINWATCH_CHROMIUM when set (and nothing else, even when it is not
// executable: then none), else the first executable of /usr/bin/chromium,
// /usr/bin/chromium-browser, /usr/bin/google-chrome. nullopt when there is none.
std::optional<std::string> FindChromium();

// Prints `html` (a self-contained page: nothing is fetched) to PDF with `chromium`, headless, in a
// temporary directory removed afterwards; the PDF's bytes. Unavailable when Chromium cannot start,
// fails, writes no PDF or runs longer than `timeout_seconds` (then its process group is killed),
// naming its exit status and the end of what it printed. Blocks the calling thread; safe to call
// from several threads (posix_spawn, one directory per call).
Result<std::string> PrintPdf(const std::string& chromium, const std::string& html,
                             double timeout_seconds = 120);

}  // namespace trainwatch::report
