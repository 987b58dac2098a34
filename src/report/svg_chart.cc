#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace trainwatch::report {
namespace {

constexpr std::string_view kColors[] = {"#2563eb", "#ea580c", "#16a34a", "#9333ea",
                                        "#0891b2", "#ca8a04", "#db2777", "#4b5563"};

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Up to `n` round tick values within [lo, hi].
std::vector<double> Ticks(double lo, double hi, int n) {
  std::vector<double> out;
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    out.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  }
  return out;
}

}  // namespace

std::string_view SeriesColor(size_t i) { return kColors[i % std::size(kColors)]; }

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string FormatNumber(double v, int digits) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "∞" : "−∞";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string EnvelopeSvg(const Chart& chart, const SvgChartOptions& options) {
  const double W = options.width, H = options.height;
  const double left = options.compact ? 46 : 64, right = 10, top = 8;
  const double bottom = options.compact ? 18 : 26;
  const double pw = W - left - right, ph = H - top - bottom;
  const int font = options.compact ? 9 : 11;

  // The y range over every finite value; log when all positive over more than four decades.
  double lo = INFINITY, hi = -INFINITY;
  for (const ChartSeries& s : chart.series) {
    for (const query::Bucket& b : s.buckets) {
      if (b.count == b.nan_count) continue;
      if (std::isfinite(b.min)) lo = std::min(lo, b.min);
      if (std::isfinite(b.max)) hi = std::max(hi, b.max);
    }
  }
  std::string svg = "<svg class=\"chart\" viewBox=\"0 0 " + Num(W) + " " + Num(H) + "\" width=\"" +
                    Num(W) + "\" height=\"" + Num(H) + "\" role=\"img\" data-metric=\"" +
                    HtmlEscape(chart.metric) + "\" font-size=\"" + std::to_string(font) + "\">";
  svg += "<rect class=\"plot\" x=\"" + Num(left) + "\" y=\"" + Num(top) + "\" width=\"" + Num(pw) +
         "\" height=\"" + Num(ph) + "\" fill=\"#fff\" stroke=\"#d1d5db\"/>";
  if (!(lo <= hi)) {
    svg += "<text x=\"" + Num(left + pw / 2) + "\" y=\"" + Num(top + ph / 2) +
           "\" text-anchor=\"middle\" fill=\"#6b7280\">no finite values</text>";
  }
  const bool log = lo > 0 && hi / lo > 1e4;
  auto fy = [&](double v) { return log ? std::log10(v) : v; };
  double ylo = lo <= hi ? fy(lo) : 0, yhi = lo <= hi ? fy(hi) : 1;
  if (yhi - ylo < 1e-12 * std::max(1.0, std::abs(yhi))) {
    const double pad = std::max(std::abs(yhi) * 0.05, 1e-9);
    ylo -= pad;
    yhi += pad;
  } else {
    const double pad = (yhi - ylo) * 0.04;
    ylo -= pad;
    yhi += pad;
  }
  const double x0 = chart.grid.from, x1 = chart.grid.to > chart.grid.from ? chart.grid.to : x0 + 1;
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * pw; };
  auto py = [&](double v) {
    double y = fy(v);
    y = std::clamp(y, ylo, yhi);
    return top + (1 - (y - ylo) / (yhi - ylo)) * ph;
  };

  // Axes: ticks and grid lines.
  const int nticks = options.compact ? 3 : 5;
  if (lo <= hi) {
    std::vector<double> yt = log ? std::vector<double>{} : Ticks(ylo, yhi, nticks);
    if (log) {
      for (double e = std::ceil(ylo); e <= yhi;
           e += std::max(1.0, std::ceil((yhi - ylo) / nticks))) {
        yt.push_back(e);
      }
    }
    for (double t : yt) {
      const double v = log ? std::pow(10.0, t) : t;
      const double y = top + (1 - (t - ylo) / (yhi - ylo)) * ph;
      svg += "<line x1=\"" + Num(left) + "\" x2=\"" + Num(left + pw) + "\" y1=\"" + Num(y) +
             "\" y2=\"" + Num(y) + "\" stroke=\"#eef0f3\"/><text x=\"" + Num(left - 4) + "\" y=\"" +
             Num(y + font / 3.0) + "\" text-anchor=\"end\" fill=\"#4b5563\">" +
             HtmlEscape(FormatNumber(v, 4)) + "</text>";
    }
  }
  for (double t : Ticks(x0, x1, nticks + 1)) {
    const double x = px(t);
    svg += "<line x1=\"" + Num(x) + "\" x2=\"" + Num(x) + "\" y1=\"" + Num(top + ph) + "\" y2=\"" +
           Num(top + ph + 3) + "\" stroke=\"#9ca3af\"/><text x=\"" + Num(x) + "\" y=\"" +
           Num(top + ph + font + 3) + "\" text-anchor=\"middle\" fill=\"#4b5563\">" +
           HtmlEscape(FormatNumber(t, 6)) + "</text>";
  }

  // Each series: the band between min and max, bucket by bucket, then the means.
  const double bw = chart.grid.Width();
  for (size_t si = 0; si < chart.series.size(); ++si) {
    const ChartSeries& s = chart.series[si];
    const std::string color(SeriesColor(si));
    std::string band, line, nans;
    std::vector<const query::Bucket*> run;  // consecutive finite buckets
    auto flush = [&] {
      if (run.empty()) return;
      std::string upper, lower;
      for (const query::Bucket* b : run) {
        const double xa = px(x0 + bw * b->index), xb = px(x0 + bw * (b->index + 1));
        upper += (upper.empty() ? "M" : "L") + Num(xa) + " " + Num(py(b->max)) + "L" + Num(xb) +
                 " " + Num(py(b->max));
      }
      for (auto it = run.rbegin(); it != run.rend(); ++it) {
        const query::Bucket* b = *it;
        const double xa = px(x0 + bw * b->index), xb = px(x0 + bw * (b->index + 1));
        lower += "L" + Num(xb) + " " + Num(py(b->min)) + "L" + Num(xa) + " " + Num(py(b->min));
      }
      band += upper + lower + "Z";
      run.clear();
    };
    int64_t prev = -2;
    for (const query::Bucket& b : s.buckets) {
      if (b.count == b.nan_count) {
        nans += "<rect x=\"" + Num(px(x0 + bw * b.index)) + "\" y=\"" + Num(top) + "\" width=\"" +
                Num(std::max(1.5, pw / chart.grid.count)) +
                "\" height=\"4\" fill=\"#dc2626\"><title>NaN</title></rect>";
        flush();
        prev = -2;
        continue;
      }
      if (static_cast<int64_t>(b.index) != prev + 1) flush();
      run.push_back(&b);
      const double mean = b.sum / static_cast<double>(b.count - b.nan_count);
      const double xm = px(x0 + bw * (b.index + 0.5));
      // the means join across empty buckets (a sparse series is a line), not across NaN
      line +=
          (prev >= 0 ? "L" : "M") + Num(xm) + " " + Num(py(std::isfinite(mean) ? mean : b.last));
      prev = b.index;
    }
    flush();
    svg += "<g class=\"series\" data-run=\"" + HtmlEscape(s.run) + "\">";
    if (!band.empty()) {
      svg += "<path class=\"band\" d=\"" + band + "\" fill=\"" + color +
             "\" fill-opacity=\"0.28\" stroke=\"" + color +
             "\" stroke-opacity=\"0.5\" stroke-width=\"0.6\"/>";
    }
    if (!line.empty()) {
      svg += "<path class=\"mean\" d=\"" + line + "\" fill=\"none\" stroke=\"" + color +
             "\" stroke-width=\"1.2\"/>";
    }
    svg += nans + "</g>";
  }
  for (double m : chart.marks) {
    if (m < x0 || m > x1) continue;
    svg += "<line class=\"mark\" x1=\"" + Num(px(m)) + "\" x2=\"" + Num(px(m)) + "\" y1=\"" +
           Num(top) + "\" y2=\"" + Num(top + ph) +
           "\" stroke=\"#dc2626\" stroke-dasharray=\"3 2\"><title>alert at " + FormatNumber(m) +
           "</title></line>";
  }
  if (log) {
    svg += "<text x=\"" + Num(left + pw - 4) + "\" y=\"" + Num(top + font + 2) +
           "\" text-anchor=\"end\" fill=\"#6b7280\">log scale</text>";
  }
  svg += "</svg>";
  return svg;
}

}  // namespace trainwatch::report
