// Charts of a report as inline SVG: each series drawn from its buckets as the exact band between
// every bucket's min and max (a single-point spike always shows), with the bucket means as a line,
// buckets that hold only NaNs marked at the top, and marks (alert steps) as red lines.
#pragma once

#include <string>
#include <string_view>

#include "report/report.h"

namespace trainwatch::report {

// Series colours, in order (the main run first).
std::string_view SeriesColor(size_t i);

struct SvgChartOptions {
  int width = 720;
  int height = 220;
  bool compact = false;  // smaller type and fewer ticks (evidence charts)
};

// An <svg class="chart"> element; a chart with no finite value says so in its middle. The y axis
// is logarithmic when every value is positive and they span more than four decades.
std::string EnvelopeSvg(const Chart& chart, const SvgChartOptions& options = {});

// Escapes & < > " ' for HTML and SVG text and attributes.
std::string HtmlEscape(std::string_view s);
// "%.4g"-like, with NaN and ±∞ spelled out.
std::string FormatNumber(double v, int digits = 6);

}  // namespace trainwatch::report
