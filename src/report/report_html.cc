#include "report/report_html.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report/svg_chart.h"

namespace trainwatch::report {
namespace {

constexpr const char* kStyle = R"css(
:root{color-scheme:light}
*{box-sizing:border-box}
body{font:13px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#111827;margin:0;background:#f3f4f6}
main{max-width:980px;margin:0 auto;padding:20px 24px 40px;background:#fff}
header h1{font-size:22px;margin:0 0 2px}
.sub{color:#6b7280;margin:0 0 12px}
h2{font-size:17px;margin:26px 0 8px;padding-bottom:4px;border-bottom:2px solid #e5e7eb}
h3{font-size:14px;margin:16px 0 6px}
table{border-collapse:collapse;width:100%;margin:6px 0 10px;font-variant-numeric:tabular-nums}
th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #e5e7eb;vertical-align:top}
th{background:#f9fafb;font-weight:600}
td.num,th.num{text-align:right}
.mono{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12px}
dl.facts{display:grid;grid-template-columns:max-content 1fr max-content 1fr;gap:3px 14px;margin:8px 0}
dl.facts dt{color:#6b7280}
dl.facts dd{margin:0}
.status{display:inline-block;padding:0 8px;border-radius:9px;font-weight:600}
.st-running{background:#dbeafe;color:#1e40af}.st-finished{background:#dcfce7;color:#166534}
.st-crashed{background:#fee2e2;color:#991b1b}.st-stalled{background:#fef3c7;color:#92400e}
.charts{display:grid;grid-template-columns:1fr;gap:10px}
figure{margin:0;break-inside:avoid}
figcaption{font-weight:600;margin:2px 0}
svg.chart{max-width:100%;height:auto;display:block}
.legend span{display:inline-block;margin-right:14px}
.legend i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;vertical-align:-2px}
.alert{border:1px solid #e5e7eb;border-left:4px solid #9ca3af;border-radius:4px;padding:6px 10px;margin:8px 0;break-inside:avoid}
.sev-critical{border-left-color:#dc2626}.sev-warning{border-left-color:#f59e0b}.sev-info{border-left-color:#3b82f6}
.alert .head{font-weight:600}
.alert .ev{display:flex;gap:12px;align-items:flex-start;flex-wrap:wrap}
.alert table{width:auto}
.diff td.changed{background:#fef9c3}
.absent{color:#9ca3af}
.muted{color:#6b7280}
.bar{display:flex;height:16px;border-radius:3px;overflow:hidden;margin:6px 0}
.bar div{height:100%}
footer{color:#9ca3af;margin-top:30px;font-size:11px}
@page{size:A4;margin:12mm}
@media print{body{background:#fff}main{max-width:none;padding:0}section+section{break-before:page}h2{margin-top:0}}
)css";

std::string Esc(std::string_view s) { return HtmlEscape(s); }

std::string StatusBadge(storage::RunStatus status) {
  const std::string name(storage::RunStatusName(status));
  return "<span class=\"status st-" + name + "\">" + name + "</span>";
}

std::string RunLabel(const storage::RunInfo& info) {
  return info.name.empty() || info.name == info.id ? info.id : info.name + " (" + info.id + ")";
}

std::string Legend(const Report& r) {
  std::string out = "<p class=\"legend\">";
  out += "<span><i style=\"background:" + std::string(SeriesColor(0)) + "\"></i>" +
         Esc(RunLabel(r.run.info)) + "</span>";
  for (size_t i = 0; i < r.compared.size(); ++i) {
    out += "<span><i style=\"background:" + std::string(SeriesColor(i + 1)) + "\"></i>" +
           Esc(RunLabel(r.compared[i].info)) + "</span>";
  }
  return out + "</p>";
}

std::string Steps(const RunSummary& s) {
  if (!s.has_steps) return "–";
  return std::to_string(s.first_step) + " – " + std::to_string(s.last_step);
}

std::string StepsPerSecond(const RunSummary& s) {
  return s.steps_per_second > 0 ? FormatNumber(s.steps_per_second, 4) : "–";
}

std::string Best(const MetricStats& m) {
  if (m.finite_count() == 0 || m.direction == 0) return "–";
  const bool low = m.direction < 0;
  return FormatNumber(low ? m.min : m.max) + " <span class=\"muted\">(" + (low ? "min" : "max") +
         ", step " + std::to_string(low ? m.min_step : m.max_step) + ")</span>";
}

const MetricStats* Find(const std::vector<MetricStats>& v, const std::string& name) {
  for (const MetricStats& m : v) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

void Summary(const Report& r, std::string* out) {
  const RunSummary& s = r.run;
  const storage::RunInfo& i = s.info;
  *out += "<section id=\"summary\" data-section=\"summary\"><h2>Summary</h2><dl class=\"facts\">";
  auto fact = [&](const char* k, const std::string& v) {
    *out += "<dt>" + std::string(k) + "</dt><dd>" + v + "</dd>";
  };
  fact("status", StatusBadge(i.status));
  fact("duration", Esc(FormatDuration(s.duration)));
  fact("started", Esc(FormatTime(i.start_time)));
  fact("ended", i.end_time > 0 ? Esc(FormatTime(i.end_time)) : "–");
  fact("steps", Esc(Steps(s)));
  fact("steps/s", Esc(StepsPerSecond(s)));
  fact("host", i.host.empty() ? "–" : Esc(i.host));
  fact("group", i.group.empty() ? "–" : Esc(i.group));
  std::string tags;
  for (const std::string& t : i.tags) tags += (tags.empty() ? "" : ", ") + Esc(t);
  fact("tags", tags.empty() ? "–" : tags);
  fact("alerts", r.alerts_available ? std::to_string(r.alerts.size()) : "not kept");
  *out += "</dl>";

  if (!r.compared.empty()) {
    *out +=
        "<h3>Compared runs</h3><table class=\"runs\"><tr><th>run</th><th>status</th>"
        "<th>duration</th><th>steps</th><th class=\"num\">steps/s</th></tr>";
    auto row = [&](const RunSummary& c) {
      *out += "<tr><td>" + Esc(RunLabel(c.info)) + "</td><td>" + StatusBadge(c.info.status) +
              "</td><td>" + Esc(FormatDuration(c.duration)) + "</td><td>" + Esc(Steps(c)) +
              "</td><td class=\"num\">" + Esc(StepsPerSecond(c)) + "</td></tr>";
    };
    row(s);
    for (const RunSummary& c : r.compared) row(c);
    *out += "</table>";
  }

  *out += "<h3>Metrics</h3>";
  if (r.metrics.empty()) {
    *out += "<p class=\"muted\">No training metrics.</p>";
  } else {
    *out +=
        "<table class=\"metrics\"><tr><th>metric</th><th class=\"num\">points</th>"
        "<th class=\"num\">final</th><th>best</th><th class=\"num\">min</th>"
        "<th class=\"num\">max</th>";
    for (const RunSummary& c : r.compared) {
      *out += "<th class=\"num\">final: " + Esc(RunLabel(c.info)) + "</th>";
    }
    *out += "</tr>";
    for (const MetricStats& m : r.metrics) {
      const bool finite = m.finite_count() > 0;
      *out +=
          "<tr><td class=\"mono\">" + Esc(m.name) + "</td><td class=\"num\">" +
          std::to_string(m.count) +
          (m.nan_count ? " <span class=\"muted\">(" + std::to_string(m.nan_count) + " NaN)</span>"
                       : "") +
          "</td><td class=\"num\">" + (m.has_final ? Esc(FormatNumber(m.final_value)) : "–") +
          "</td><td>" + Best(m) + "</td><td class=\"num\">" +
          (finite ? Esc(FormatNumber(m.min)) : "–") + "</td><td class=\"num\">" +
          (finite ? Esc(FormatNumber(m.max)) : "–") + "</td>";
      for (const RunSummary& c : r.compared) {
        auto it = r.compared_metrics.find(c.info.id);
        const MetricStats* cm = it == r.compared_metrics.end() ? nullptr : Find(it->second, m.name);
        *out += "<td class=\"num\">" +
                (cm && cm->has_final ? Esc(FormatNumber(cm->final_value)) : "–") + "</td>";
      }
      *out += "</tr>";
    }
    *out += "</table>";
  }

  *out += "<h3>Where the time went</h3>";
  if (r.phases.empty()) {
    *out +=
        "<p class=\"muted\">No phase timers (<span class=\"mono\">time/&lt;phase&gt;</span>, "
        "from tw.timer and log_step). Wall time: " +
        Esc(FormatDuration(s.duration)) +
        (s.steps_per_second > 0
             ? ", " + Esc(FormatNumber(1 / s.steps_per_second, 4)) + " s per step"
             : "") +
        ".</p>";
  } else {
    double step = 0, parts = 0;
    for (const PhaseTime& p : r.phases) {
      if (p.phase == "step")
        step = p.mean_seconds;
      else
        parts += p.mean_seconds;
    }
    const double whole = step > 0 ? std::max(step, parts) : parts;
    *out += "<div class=\"bar\" data-testid=\"time-bar\">";
    size_t ci = 0;
    for (const PhaseTime& p : r.phases) {
      if (p.phase == "step" || whole <= 0) continue;
      char w[32];
      std::snprintf(w, sizeof w, "%.2f", 100 * p.mean_seconds / whole);
      *out += "<div title=\"" + Esc(p.phase) + "\" style=\"width:" + w +
              "%;background:" + std::string(SeriesColor(ci++)) + "\"></div>";
    }
    *out +=
        "</div><table class=\"phases\"><tr><th>phase</th><th class=\"num\">mean per step</th>"
        "<th class=\"num\">share of the step</th><th class=\"num\">total</th>"
        "<th class=\"num\">steps timed</th></tr>";
    ci = 0;
    for (const PhaseTime& p : r.phases) {
      const bool is_step = p.phase == "step";
      std::string share = "–";
      if (!is_step && whole > 0) share = FormatNumber(100 * p.mean_seconds / whole, 3) + "%";
      *out += "<tr><td>" +
              (is_step ? std::string()
                       : "<i style=\"display:inline-block;width:10px;height:10px;background:" +
                             std::string(SeriesColor(ci++)) + "\"></i> ") +
              Esc(p.phase) + (is_step ? " (whole step)" : "") + "</td><td class=\"num\">" +
              Esc(FormatNumber(p.mean_seconds * 1000, 4)) + " ms</td><td class=\"num\">" + share +
              "</td><td class=\"num\">" + Esc(FormatDuration(p.total_seconds)) +
              "</td><td class=\"num\">" + std::to_string(p.count) + "</td></tr>";
    }
    if (step > parts && parts > 0) {
      *out += "<tr><td>other (step minus the phases)</td><td class=\"num\">" +
              Esc(FormatNumber((step - parts) * 1000, 4)) + " ms</td><td class=\"num\">" +
              Esc(FormatNumber(100 * (step - parts) / step, 3)) + "%</td><td></td><td></td></tr>";
    }
    *out += "</table><p class=\"muted\">Wall time " + Esc(FormatDuration(s.duration)) +
            "; phase totals count only the steps that were timed.</p>";
  }
  *out += "</section>";
}

void Charts(const Report& r, std::string* out) {
  *out += "<section id=\"charts\" data-section=\"charts\"><h2>Charts</h2>";
  if (r.charts.empty()) {
    *out += "<p class=\"muted\">No training metrics to chart.</p></section>";
    return;
  }
  *out += Legend(r) +
          "<p class=\"muted\">Each band is the exact range (min to max) of the points in each of " +
          std::to_string(r.request.chart_buckets) +
          " buckets along the steps, the line their mean; red ticks on top: buckets of NaN only; "
          "dashed red lines: alerts on the metric.</p><div class=\"charts\">";
  for (const Chart& c : r.charts) {
    *out += "<figure data-metric=\"" + Esc(c.metric) + "\"><figcaption class=\"mono\">" +
            Esc(c.metric) + " <span class=\"muted\">by step</span></figcaption>" + EnvelopeSvg(c) +
            "</figure>";
  }
  *out += "</div></section>";
}

std::string_view SeverityOf(const alerting::AlertRecord& a) {
  return a.severity == "critical" || a.severity == "warning" ? std::string_view(a.severity)
                                                             : std::string_view("info");
}

// The alerts along the run's steps, one row per kind.
std::string AlertTimeline(const Report& r) {
  const double W = 720, left = 110, right = 10;
  std::vector<std::string> kinds;
  for (const AlertEntry& e : r.alerts) {
    const std::string k = e.alert.kind == "rule" ? e.alert.name : e.alert.kind;
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
  }
  const double row = 20, top = 6, H = top + row * kinds.size() + 22;
  double lo = r.run.has_steps ? r.run.first_step : 0, hi = r.run.has_steps ? r.run.last_step : 1;
  for (const AlertEntry& e : r.alerts) {
    lo = std::min(lo, static_cast<double>(e.alert.step));
    hi = std::max(hi, static_cast<double>(e.alert.step));
  }
  if (hi <= lo) hi = lo + 1;
  auto px = [&](double x) { return left + (x - lo) / (hi - lo) * (W - left - right); };
  char buf[256];
  std::string svg;
  std::snprintf(buf, sizeof buf,
                "<svg class=\"chart timeline\" "
                "viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" font-size=\"11\">",
                W, H, W, H);
  svg += buf;
  for (size_t k = 0; k < kinds.size(); ++k) {
    const double y = top + row * k + row / 2;
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e7eb\"/>",
                  left, W - right, y, y);
    svg += buf;
    std::snprintf(buf, sizeof buf,
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#374151\">", left - 6,
                  y + 4);
    svg += buf + Esc(kinds[k]) + "</text>";
  }
  for (const AlertEntry& e : r.alerts) {
    const alerting::AlertRecord& a = e.alert;
    const std::string k = a.kind == "rule" ? a.name : a.kind;
    const size_t ki = std::find(kinds.begin(), kinds.end(), k) - kinds.begin();
    const double y = top + row * ki + row / 2;
    const std::string_view sev = SeverityOf(a);
    const char* color = sev == "critical" ? "#dc2626" : sev == "warning" ? "#f59e0b" : "#3b82f6";
    const double x = px(a.step);
    if (a.status == alerting::AlertStatus::kResolved && a.resolved_step > a.step) {
      std::snprintf(buf, sizeof buf,
                    "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                    "stroke-width=\"3\" stroke-opacity=\"0.45\"/>",
                    x, px(static_cast<double>(a.resolved_step)), y, y, color);
      svg += buf;
    }
    std::snprintf(buf, sizeof buf,
                  "<circle class=\"alert-dot\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"><title>",
                  x, y, color);
    svg += buf + Esc("#" + std::to_string(a.id) + " " + k + " at step " + std::to_string(a.step)) +
           "</title></circle>";
  }
  const double axis = top + row * kinds.size() + 4;
  std::snprintf(buf, sizeof buf,
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#9ca3af\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" fill=\"#4b5563\">step %s</text>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#4b5563\">%s</text>",
                left, W - right, axis, axis, left, axis + 14, FormatNumber(lo).c_str(), W - right,
                axis + 14, FormatNumber(hi).c_str());
  svg += buf;
  return svg + "</svg>";
}

void Alerts(const Report& r, std::string* out) {
  *out += "<section id=\"alerts\" data-section=\"alerts\"><h2>Alerts</h2>";
  if (!r.alerts_available) {
    *out += "<p class=\"muted\">This server keeps no alerts.</p></section>";
    return;
  }
  if (r.alerts.empty()) {
    *out += "<p class=\"none\">No alerts were raised on this run.</p></section>";
    return;
  }
  *out += "<p>" + std::to_string(r.alerts.size()) + " alert" + (r.alerts.size() == 1 ? "" : "s") +
          ", by step.</p>" + AlertTimeline(r);
  for (const AlertEntry& e : r.alerts) {
    const alerting::AlertRecord& a = e.alert;
    const std::string title = a.kind == "rule" ? a.name + " (rule)" : a.kind;
    *out += "<div class=\"alert sev-" + std::string(SeverityOf(a)) + "\" data-alert-id=\"" +
            std::to_string(a.id) + "\"><div class=\"head\">#" + std::to_string(a.id) + " " +
            Esc(title) +
            (a.metric.empty() ? "" : " on <span class=\"mono\">" + Esc(a.metric) + "</span>") +
            " at step " + std::to_string(a.step) + " — " + Esc(a.severity) + ", " +
            std::string(alerting::StatusName(a.status)) + "</div><div>" + Esc(a.message) +
            "</div><div class=\"ev\"><table class=\"evidence\">";
    auto row = [&](const std::string& k, const std::string& v) {
      *out += "<tr><th>" + Esc(k) + "</th><td class=\"mono\">" + Esc(v) + "</td></tr>";
    };
    row("value", FormatNumber(a.value));
    row("raised", FormatTime(a.started_at));
    if (a.status == alerting::AlertStatus::kResolved) {
      row("resolved",
          FormatTime(a.resolved_at) + " (step " + std::to_string(a.resolved_step) + ")");
    }
    if (a.occurrences > 1) row("occurrences", std::to_string(a.occurrences));
    if (a.acknowledged) row("acknowledged by", a.acknowledged_by);
    for (const auto& [k, v] : a.annotations) row(k, v);
    for (const auto& [k, v] : a.labels) row("label " + k, v);
    *out += "</table>";
    if (e.evidence) {
      SvgChartOptions small;
      small.width = 380;
      small.height = 140;
      small.compact = true;
      *out += "<figure class=\"evidence-chart\">" + EnvelopeSvg(*e.evidence, small) + "</figure>";
    }
    *out += "</div></div>";
  }
  *out += "</section>";
}

void Config(const Report& r, std::string* out) {
  *out += "<section id=\"config\" data-section=\"config\"><h2>Config</h2>";
  if (r.config.empty()) {
    *out += "<p class=\"muted\">No config recorded.</p>";
  }
  auto value = [](const std::optional<std::string>& v) {
    return v ? "<span class=\"mono\">" + Esc(*v) + "</span>"
             : std::string("<span class=\"absent\">absent</span>");
  };
  if (!r.compared.empty()) {
    size_t differing = 0;
    for (const ConfigRow& row : r.config) differing += row.differs;
    *out += "<h3>Differences from the compared runs</h3>";
    if (differing == 0) {
      *out += "<p class=\"none\">The configs are identical.</p>";
    } else {
      *out += "<table class=\"diff\" data-testid=\"config-diff\"><tr><th>key</th><th>" +
              Esc(RunLabel(r.run.info)) + "</th>";
      for (const RunSummary& c : r.compared) *out += "<th>" + Esc(RunLabel(c.info)) + "</th>";
      *out += "</tr>";
      for (const ConfigRow& row : r.config) {
        if (!row.differs) continue;
        *out += "<tr><td class=\"mono\">" + Esc(row.path) + "</td>";
        for (size_t i = 0; i < row.values.size(); ++i) {
          const bool changed = i > 0 && row.values[i] != row.values[0];
          *out += std::string(changed ? "<td class=\"changed\">" : "<td>") + value(row.values[i]) +
                  "</td>";
        }
        *out += "</tr>";
      }
      *out += "</table>";
    }
    *out += "<h3>This run's config</h3>";
  }
  if (!r.config.empty()) {
    *out += "<table class=\"config\"><tr><th>key</th><th>value</th></tr>";
    for (const ConfigRow& row : r.config) {
      if (!row.values[0]) continue;
      *out += "<tr><td class=\"mono\">" + Esc(row.path) + "</td><td>" + value(row.values[0]) +
              "</td></tr>";
    }
    *out += "</table>";
  }
  *out += "</section>";
}

std::string SystemValue(const std::string& name, double v) {
  if (name.ends_with("_bytes")) {
    char buf[32];
    if (std::abs(v) >= 1e9)
      std::snprintf(buf, sizeof buf, "%.2f GB", v / 1e9);
    else if (std::abs(v) >= 1e6)
      std::snprintf(buf, sizeof buf, "%.1f MB", v / 1e6);
    else
      std::snprintf(buf, sizeof buf, "%.1f kB", v / 1e3);
    return buf;
  }
  if (name.ends_with("_bytes_per_second")) return SystemValue("_bytes", v) + "/s";
  if (name.ends_with("percent")) return FormatNumber(v, 3) + "%";
  return FormatNumber(v, 4);
}

void System(const Report& r, std::string* out) {
  *out += "<section id=\"system\" data-section=\"system\"><h2>System and GPU</h2>";
  if (r.system.empty()) {
    *out +=
        "<p class=\"muted\">No system metrics were recorded for this run (imported runs and "
        "runs with <span class=\"mono\">system_metrics=0</span> have none).</p></section>";
    return;
  }
  bool gpu = false;
  for (const SystemStat& s : r.system) gpu = gpu || s.name.rfind("system/gpu/", 0) == 0;
  *out += std::string("<p class=\"muted\">Sampled against time since the start. ") +
          (gpu ? "" : "No GPU was seen (no NVML). ") +
          "Idle: every sample of a utilisation below 10%; a peak's time is its bucket's.</p>";
  *out +=
      "<table class=\"system\"><tr><th>series</th><th class=\"num\">samples</th>"
      "<th class=\"num\">mean</th><th class=\"num\">min</th><th class=\"num\">peak</th>"
      "<th class=\"num\">peak at</th><th>idle</th></tr>";
  for (const SystemStat& s : r.system) {
    std::string idle = "–";
    if (s.utilisation) {
      idle = s.idle.empty()
                 ? "none"
                 : FormatDuration(s.idle_seconds) + " in " + std::to_string(s.idle.size()) +
                       " period" + (s.idle.size() == 1 ? "" : "s");
      for (size_t i = 0; i < s.idle.size() && i < 4; ++i) {
        idle += (i ? ", " : ": ") + FormatDuration(s.idle[i].first) + "–" +
                FormatDuration(s.idle[i].second);
      }
      if (s.idle.size() > 4) idle += ", …";
    }
    *out += "<tr><td class=\"mono\">" + Esc(s.name) + "</td><td class=\"num\">" +
            std::to_string(s.count) + "</td><td class=\"num\">" + Esc(SystemValue(s.name, s.mean)) +
            "</td><td class=\"num\">" + Esc(SystemValue(s.name, s.min)) +
            "</td><td class=\"num\">" + Esc(SystemValue(s.name, s.max)) +
            "</td><td class=\"num\">" + Esc(FormatDuration(s.peak_at)) + "</td><td>" + Esc(idle) +
            "</td></tr>";
  }
  *out += "</table><div class=\"charts\">";
  for (const Chart& c : r.system_charts) {
    *out += "<figure data-metric=\"" + Esc(c.metric) + "\"><figcaption class=\"mono\">" +
            Esc(c.metric) +
            " <span class=\"muted\">by seconds since the start</span></figcaption>" +
            EnvelopeSvg(c, {720, 160, false}) + "</figure>";
  }
  *out += "</div></section>";
}

void Ranks(const Report& r, std::string* out) {
  *out +=
      "<section id=\"ranks\" data-section=\"ranks\"><h2>Ranks</h2><p>" +
      std::to_string(r.ranks.size()) + " rank" + (r.ranks.size() == 1 ? "" : "s") +
      " of a world of " + std::to_string(r.world_size) +
      " (docs/distributed.md). Lag: steps behind the median rank; the metrics' mean and maximum "
      "over each rank's whole run.</p><table class=\"ranks\"><tr><th class=\"num\">rank</th>"
      "<th>host</th><th>status</th><th class=\"num\">last step</th><th class=\"num\">steps/s</th>"
      "<th class=\"num\">lag</th>";
  for (const std::string& m : r.rank_metrics) {
    *out += "<th class=\"num\">" + Esc(m) + " mean</th><th class=\"num\">max</th>";
  }
  *out += "</tr>";
  for (const RankSummary& k : r.ranks) {
    *out += "<tr data-rank=\"" + std::to_string(k.rank) + "\"><td class=\"num\">" +
            std::to_string(k.rank) + "</td><td>" + (k.host.empty() ? "–" : Esc(k.host)) +
            "</td><td>" + Esc(k.status) + "</td><td class=\"num\">" +
            (k.last_step >= 0 ? std::to_string(k.last_step) : "–") + "</td><td class=\"num\">" +
            (k.steps_per_second > 0 ? Esc(FormatNumber(k.steps_per_second, 4)) : "–") +
            "</td><td class=\"num\">" + std::to_string(k.lag) + "</td>";
    for (size_t i = 0; i < r.rank_metrics.size(); ++i) {
      auto cell = [&](const std::optional<double>& v) {
        *out += "<td class=\"num\">" + (v ? Esc(FormatNumber(*v, 4)) : std::string("–")) + "</td>";
      };
      cell(i < k.means.size() ? k.means[i] : std::nullopt);
      cell(i < k.maxes.size() ? k.maxes[i] : std::nullopt);
    }
    *out += "</tr>";
  }
  *out += "</table></section>";
}

}  // namespace

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "–";
  char buf[48];
  if (seconds < 60) {
    std::snprintf(buf, sizeof buf, "%.3g s", seconds);
    return buf;
  }
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm %02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lldh %02lldm %02llds", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  }
  return buf;
}

std::string FormatTime(double unix_seconds) {
  if (unix_seconds <= 0 || !std::isfinite(unix_seconds)) return "–";
  const time_t t = static_cast<time_t>(unix_seconds);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[48];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string RenderReportHtml(const Report& r) {
  std::string out;
  out.reserve(256 * 1024);
  const storage::RunInfo& i = r.run.info;
  out +=
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
      "<meta name=\"generator\" content=\"" +
      Esc(r.request.generator) +
      "\">"
      "<title>Training report: " +
      Esc(i.project + "/" + RunLabel(i)) + "</title><style>" + kStyle +
      "</style></head><body><main><header><h1>Training report: " + Esc(RunLabel(i)) +
      "</h1><p class=\"sub\">project <b>" + Esc(i.project) + "</b> · run <span class=\"mono\">" +
      Esc(i.id) + "</span>";
  if (!r.compared.empty()) {
    out += " · compared with ";
    for (size_t c = 0; c < r.compared.size(); ++c) {
      out += (c ? ", " : "") + ("<span class=\"mono\">" + Esc(r.compared[c].info.id) + "</span>");
    }
  }
  out += " · generated " + Esc(FormatTime(r.generated_at)) + "</p></header>";
  Summary(r, &out);
  Charts(r, &out);
  Alerts(r, &out);
  Config(r, &out);
  System(r, &out);
  if (!r.ranks.empty()) Ranks(r, &out);
  out += "<footer>" + Esc(r.request.generator) +
         " · a self-contained file: no scripts, fonts or network.</footer></main></body></html>\n";
  return out;
}

}  // namespace trainwatch::report
