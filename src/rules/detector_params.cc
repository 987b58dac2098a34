#include "rules/detector_params.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "rules/duration.h"

namespace trainwatch::rules {
namespace {

using detect::DetectorOptions;
constexpr double kBig = 1e12;

// Range shorthands: (lo, hi, lo_open, hi_open).
struct Range {
  double min, max;
  bool min_open, max_open;
};
constexpr Range kPositive{0, kBig, true, false};
constexpr Range kNonNegative{0, kBig, false, false};
constexpr Range kWeight{0, 1, true, false};    // an EWMA weight in (0, 1]
constexpr Range kFraction{0, 1, false, true};  // [0, 1)
constexpr Range kAtLeastOne{1, kBig, false, false};

constexpr ParamSpec Real(std::string_view name, std::string_view section,
                         double DetectorOptions::*field, Range r, std::string_view meaning) {
  return {name,       section, ParamType::kReal, r.min,   r.max,  r.min_open,
          r.max_open, field,   nullptr,          nullptr, meaning};
}
constexpr ParamSpec Seconds(std::string_view name, std::string_view section,
                            double DetectorOptions::*field, Range r, std::string_view meaning) {
  return {
      name,    section, ParamType::kSeconds, r.min, r.max, r.min_open, r.max_open, field, nullptr,
      nullptr, meaning};
}
constexpr ParamSpec Count(std::string_view name, std::string_view section,
                          int64_t DetectorOptions::*field, Range r, std::string_view meaning) {
  return {name,    section, ParamType::kCount, r.min,  r.max, r.min_open, r.max_open,
          nullptr, field,   nullptr,           meaning};
}
constexpr ParamSpec Flag(std::string_view name, std::string_view section,
                         bool DetectorOptions::*field, std::string_view meaning) {
  return {name, section, ParamType::kFlag, 0, 1, false, false, nullptr, nullptr, field, meaning};
}

const ParamSpec kParams[] = {
    Count("warm", "common", &DetectorOptions::warm, kNonNegative,
          "steps of values a baseline needs before a baseline-based rule may fire (as records at "
          "the run's cadence)"),
    Count("warm_records", "common", &DetectorOptions::warm_records, kAtLeastOne,
          "... but never fewer records than this"),
    Real("a_slow", "common", &DetectorOptions::a_slow, kWeight,
         "EWMA weight per step of the slow baselines (0.02: time constant 50 steps)"),
    Real("a_record_max", "common", &DetectorOptions::a_record_max, kWeight,
         "the most one record may weigh in an EWMA, however many steps it covers"),
    Count("window", "common", &DetectorOptions::window, Range{1, 64, false, false},
          "records in the rolling median windows of loss and grad norm, at most 64"),
    Real("sensitivity", "common", &DetectorOptions::sensitivity, Range{0.25, 4, false, false},
         "scales every ratio threshold on the log scale (the alerting file's sensitivity: low 1.5, "
         "high 0.7)"),
    Count("resolve_records", "common", &DetectorOptions::resolve_records, kAtLeastOne,
          "an open incident resolves after its statistic stayed under half its threshold this many "
          "observations"),

    Real("shock_ratio", "lr", &DetectorOptions::shock_ratio, kPositive,
         "lr > shock_ratio * lr_max opens an LR excursion (shock)"),
    Count("shock_window", "lr", &DetectorOptions::shock_window, kNonNegative,
          "steps a shock stays open unclassified; loss_spike is inhibited meanwhile"),
    Count("shock_min_records", "lr", &DetectorOptions::shock_min_records, kNonNegative,
          "records before the shock rule applies"),
    Real("restart_jump", "lr", &DetectorOptions::restart_jump, kPositive,
         "warm restart: lr > restart_jump * lr_prev ..."),
    Real("restart_known", "lr", &DetectorOptions::restart_known, kPositive,
         "... and lr <= restart_known * lr_max"),
    Count("restart_window", "lr", &DetectorOptions::restart_window, kNonNegative,
          "steps after a warm restart without loss_spike or generic divergence"),
    Count("resume_window", "lr", &DetectorOptions::resume_window, kNonNegative,
          "steps after a resume (step went back) likewise"),
    Real("lr_drop_ratio", "lr", &DetectorOptions::lr_drop_ratio, kPositive,
         "a one-record lr drop by this factor is a step drop (also the plateau LR test)"),

    Count("dead_after", "nan", &DetectorOptions::dead_after, kAtLeastOne,
          "consecutive non-finite training records after which the run counts as dead"),
    Flag("nan_include_eval", "nan", &DetectorOptions::nan_include_eval,
         "non-finite eval metrics raise nan too"),

    Real("expl_ratio", "grad_explosion", &DetectorOptions::expl_ratio, kPositive,
         "grad norm over expl_ratio times its baseline is a hit"),
    Count("expl_persist", "grad_explosion", &DetectorOptions::expl_persist, kAtLeastOne,
          "hits needed in the last expl_win records (rule B)"),
    Count("expl_win", "grad_explosion", &DetectorOptions::expl_win, Range{1, 32, false, false},
          "records of hit history (rule B), at most 32"),
    Count("expl_shock_steps", "grad_explosion", &DetectorOptions::expl_shock_steps, kNonNegative,
          "rule A: one hit within this many steps of an LR shock"),
    Real("expl_jump_ratio", "grad_explosion", &DetectorOptions::expl_jump_ratio, kPositive,
         "rule S: one record this many times the median of the window"),

    Real("vanish_ratio", "grad_vanishing", &DetectorOptions::vanish_ratio, kPositive,
         "median per-layer grad norm this many times below its baseline"),
    Count("vanish_persist", "grad_vanishing", &DetectorOptions::vanish_persist, kAtLeastOne,
          "consecutive records the collapse must hold"),

    Real("spike_ratio", "loss_spike", &DetectorOptions::spike_ratio, kPositive,
         "threshold = max(ln spike_ratio, spike_k * sigma) over the window median of ln loss"),
    Real("spike_k", "loss_spike", &DetectorOptions::spike_k, kNonNegative,
         "robust sigmas of the run's own loss noise a spike must exceed"),
    Count("spike_min_records", "loss_spike", &DetectorOptions::spike_min_records, kAtLeastOne,
          "logged losses the window needs before the rule may fire"),

    Real("osc_ratio", "loss_oscillation", &DetectorOptions::osc_ratio, kPositive,
         "loss variability over its pre-shock baseline that counts as oscillation"),
    Count("osc_age", "loss_oscillation", &DetectorOptions::osc_age, kNonNegative,
          "oscillation is checked at shock age [osc_age, osc_age + osc_span]"),
    Count("osc_span", "loss_oscillation", &DetectorOptions::osc_span, kNonNegative, "see osc_age"),
    Real("a_dif_base", "loss_oscillation", &DetectorOptions::a_dif_base, kWeight,
         "EWMA weight of the baseline |d ln loss|"),
    Real("a_dif_fast", "loss_oscillation", &DetectorOptions::a_dif_fast, kWeight,
         "EWMA weight of the fast |d ln loss|"),

    Real("div_rise", "divergence", &DetectorOptions::div_rise, kPositive,
         "rise of the smoothed ln loss that counts as divergence (ln 2: doubled)"),
    Count("div_persist", "divergence", &DetectorOptions::div_persist, kNonNegative,
          "steps the generic rise must hold (and at least warm_records records)"),
    Count("div_warmup_records", "divergence", &DetectorOptions::div_warmup_records, kAtLeastOne,
          "a loss excursion held this many records while the lr kept rising"),
    Real("div_eval_ratio", "divergence", &DetectorOptions::div_eval_ratio, kPositive,
         "eval loss this many times its best while no training record is logged"),

    Real("plateau_ratio", "plateau", &DetectorOptions::plateau_ratio, kPositive,
         "update_ratio this many times below its baseline"),
    Count("plateau_persist", "plateau", &DetectorOptions::plateau_persist, kAtLeastOne,
          "consecutive records the collapse must hold"),

    Real("of_rel", "overfitting", &DetectorOptions::of_rel, kNonNegative,
         "eval loss rise of at least this fraction over its minimum ..."),
    Count("of_k", "overfitting", &DetectorOptions::of_k, kAtLeastOne,
          "... on this many consecutive evals ..."),
    Real("of_train_drop", "overfitting", &DetectorOptions::of_train_drop, kFraction,
         "... while train loss fell at least this fraction since the eval minimum"),
    Count("of_window", "overfitting", &DetectorOptions::of_window, kNonNegative,
          "only within this many evals after the minimum"),
    Real("of_a", "overfitting", &DetectorOptions::of_a, kWeight,
         "EWMA weight of the eval noise estimate"),
    Real("of_k_noise", "overfitting", &DetectorOptions::of_k_noise, kNonNegative,
         "the rise must also exceed of_k_noise * eval noise"),
    Real("of_smooth", "overfitting", &DetectorOptions::of_smooth, kWeight,
         "EWMA weight of the smoothed eval loss"),

    Seconds("stall_floor", "stalled", &DetectorOptions::stall_floor, kNonNegative,
            "threshold = max(stall_floor, stall_mult * longest normal gap)"),
    Real("stall_mult", "stalled", &DetectorOptions::stall_mult, kNonNegative, "see stall_floor"),

    Real("tp_ratio", "throughput_drop", &DetectorOptions::tp_ratio, kPositive,
         "median step duration over its baseline that counts as a drop"),
    Count("tp_win", "throughput_drop", &DetectorOptions::tp_win, Range{1, 10001, false, false},
          "records in the median window (a ring of this many doubles per run)"),
    Count("tp_persist", "throughput_drop", &DetectorOptions::tp_persist, kAtLeastOne,
          "consecutive records over the ratio"),
    Real("a_tp_base", "throughput_drop", &DetectorOptions::a_tp_base, kWeight,
         "EWMA weight of the step-duration baseline"),

    Real("straggler_ratio", "straggler", &DetectorOptions::straggler_ratio, kPositive,
         "a rank's time to its first collective over the median of the other ranks' at that step"),
    Seconds("straggler_min_seconds", "straggler", &DetectorOptions::straggler_min_seconds,
            kNonNegative, "... and at least this much above it"),
    Count("straggler_persist", "straggler", &DetectorOptions::straggler_persist, kAtLeastOne,
          "steps over both margins among the rank's last straggler_window"),
    Count("straggler_window", "straggler", &DetectorOptions::straggler_window,
          Range{1, 32, false, false}, "the rank's last steps judged together, at most 32"),
    Count("desync_steps", "rank_desync", &DetectorOptions::desync_steps, kNonNegative,
          "steps a rank may be behind the others (plus the steps of desync_seconds and one logging "
          "interval)"),
    Seconds("desync_seconds", "rank_desync", &DetectorOptions::desync_seconds, kNonNegative,
            "delivery delay a rank may be behind the others"),
    Real("desync_rel", "rank_desync", &DetectorOptions::desync_rel, kPositive,
         "relative difference of a replicated metric from the other ranks' median that counts"),
    Count("desync_persist", "rank_desync", &DetectorOptions::desync_persist, kAtLeastOne,
          "consecutive observations the desync must hold"),
    Real("dead_heartbeats", "rank_dead", &DetectorOptions::dead_heartbeats, kPositive,
         "heartbeat intervals without anything from a rank that sends heartbeats"),
    Seconds("rank_dead_floor", "rank_dead", &DetectorOptions::rank_dead_floor, kNonNegative,
            "without heartbeats: threshold = max(rank_dead_floor, rank_dead_mult * its record "
            "interval)"),
    Real("rank_dead_mult", "rank_dead", &DetectorOptions::rank_dead_mult, kNonNegative,
         "see rank_dead_floor"),
    Seconds(
        "hang_floor", "collective_hang", &DetectorOptions::hang_floor, kNonNegative,
        "threshold = max(hang_floor, hang_mult * step interval, every rank's rank_dead threshold)"),
    Real("hang_mult", "collective_hang", &DetectorOptions::hang_mult, kNonNegative,
         "see hang_floor"),
};

constexpr std::string_view kListBindings[] = {
    "loss",          "grad_norm",          "lr",        "update_ratio", "eval_loss",
    "eval_prefixes", "time_to_collective", "replicated"};
constexpr std::string_view kStringBindings[] = {"loss_fallback_suffix", "layer_grad_norm_prefix"};

std::vector<std::string>* ListBinding(detect::MetricBindings& b, std::string_view field) {
  if (field == "loss") return &b.loss;
  if (field == "grad_norm") return &b.grad_norm;
  if (field == "lr") return &b.lr;
  if (field == "update_ratio") return &b.update_ratio;
  if (field == "eval_loss") return &b.eval_loss;
  if (field == "eval_prefixes") return &b.eval_prefixes;
  if (field == "time_to_collective") return &b.time_to_collective;
  if (field == "replicated") return &b.replicated;
  return nullptr;
}

std::string* StringBinding(detect::MetricBindings& b, std::string_view field) {
  if (field == "loss_fallback_suffix") return &b.loss_fallback_suffix;
  if (field == "layer_grad_norm_prefix") return &b.layer_grad_norm_prefix;
  return nullptr;
}

std::string SectionList() {
  std::string out = "common, lr";
  for (int k = 0; k < detect::kAlertKindCount; ++k) {
    out += ", ";
    out += detect::KindName(static_cast<detect::AlertKind>(k));
  }
  return out;
}

std::string ParamsOf(std::string_view section) {
  std::string out = detect::KindFromName(section) ? "enabled" : "";
  for (const ParamSpec& p : kParams) {
    if (p.section != section) continue;
    if (!out.empty()) out += ", ";
    out += p.name;
  }
  return out;
}

std::optional<bool> ParseFlag(std::string_view s) {
  for (std::string_view t : {"true", "True", "TRUE", "yes", "on"}) {
    if (s == t) return true;
  }
  for (std::string_view f : {"false", "False", "FALSE", "no", "off"}) {
    if (s == f) return false;
  }
  return std::nullopt;
}

std::string FormatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string RangeText(const ParamSpec& p) {
  const bool unbounded = p.max >= kBig;
  if (unbounded) return std::string(p.min_open ? "> " : ">= ") + FormatNumber(p.min);
  return std::string(p.min_open ? "in (" : "in [") + FormatNumber(p.min) + ", " +
         FormatNumber(p.max) + (p.max_open ? ")" : "]");
}

// Parses `text` per `spec`; the flag, count or value as a double.
Result<double> ParseValue(const ParamSpec& spec, std::string_view text) {
  const std::string where = std::string(spec.section) + "." + std::string(spec.name) + ": ";
  const std::string got = ", got '" + std::string(text) + "'";
  double v = 0;
  switch (spec.type) {
    case ParamType::kFlag: {
      std::optional<bool> flag = ParseFlag(text);
      if (!flag) return Status::InvalidArgument(where + "expected true or false" + got);
      return *flag ? 1.0 : 0.0;
    }
    case ParamType::kCount: {
      int64_t n = 0;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
      if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
        return Status::InvalidArgument(where + "expected a whole number" + got);
      }
      v = static_cast<double>(n);
      break;
    }
    case ParamType::kReal: {
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() ||
          !std::isfinite(v)) {
        return Status::InvalidArgument(where + "expected a finite number" + got);
      }
      break;
    }
    case ParamType::kSeconds: {
      Result<double> d = ParseDuration(text);
      if (!d.ok())
        return d.status().WithContext(std::string(spec.section) + "." + std::string(spec.name));
      v = *d;
      break;
    }
  }
  const bool low = spec.min_open ? v <= spec.min : v < spec.min;
  const bool high = spec.max_open ? v >= spec.max : v > spec.max;
  if (low || high) return Status::InvalidArgument(where + "must be " + RangeText(spec) + got);
  return v;
}

}  // namespace

std::span<const ParamSpec> ParamSpecs() { return kParams; }

const ParamSpec* FindParam(std::string_view name) {
  for (const ParamSpec& p : kParams) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

bool IsSection(std::string_view name) {
  return name == "common" || name == "lr" || detect::KindFromName(name).has_value();
}

std::optional<double> SensitivityScale(std::string_view name) {
  if (name == "low") return 1.5;
  if (name == "default") return 1.0;
  if (name == "high") return 0.7;
  return std::nullopt;
}

std::string DefaultValueText(const ParamSpec& spec) {
  const DetectorOptions defaults;
  if (spec.flag != nullptr) return defaults.*spec.flag ? "true" : "false";
  if (spec.count != nullptr) return std::to_string(defaults.*spec.count);
  return FormatNumber(defaults.*spec.real) + (spec.type == ParamType::kSeconds ? "s" : "");
}

Status DetectorSettings::Set(std::string_view section, std::string_view param,
                             std::string_view value) {
  if (!IsSection(section)) {
    return Status::InvalidArgument("unknown detector '" + std::string(section) +
                                   "' (known: " + SectionList() + ")");
  }
  if (param == "enabled") {
    std::optional<detect::AlertKind> kind = detect::KindFromName(section);
    if (!kind) {
      return Status::InvalidArgument("'enabled' applies to a detector kind, not to '" +
                                     std::string(section) + "'");
    }
    std::optional<bool> flag = ParseFlag(value);
    if (!flag) {
      return Status::InvalidArgument(std::string(section) +
                                     ".enabled: expected true or false, got '" +
                                     std::string(value) + "'");
    }
    enabled_[static_cast<size_t>(*kind)] = *flag;
    return Status::Ok();
  }
  const ParamSpec* spec = FindParam(param);
  if (spec == nullptr) {
    return Status::InvalidArgument("unknown parameter '" + std::string(param) + "' for '" +
                                   std::string(section) +
                                   "' (its parameters: " + ParamsOf(section) + ")");
  }
  if (spec->section != section) {
    return Status::InvalidArgument("parameter '" + std::string(param) + "' belongs to '" +
                                   std::string(spec->section) + "', not '" + std::string(section) +
                                   "'");
  }
  TW_ASSIGN_OR_RETURN(double v, ParseValue(*spec, value));
  params_.emplace_back(spec, v);
  return Status::Ok();
}

Status DetectorSettings::SetBinding(std::string_view field, std::vector<std::string> values) {
  detect::MetricBindings probe;
  if (StringBinding(probe, field) != nullptr) {
    if (values.size() != 1) {
      return Status::InvalidArgument("bindings." + std::string(field) + ": expected one string");
    }
  } else if (ListBinding(probe, field) == nullptr) {
    std::string known;
    for (std::string_view n : kListBindings)
      known += std::string(known.empty() ? "" : ", ") + std::string(n);
    for (std::string_view n : kStringBindings) known += ", " + std::string(n);
    return Status::InvalidArgument("unknown binding '" + std::string(field) + "' (known: " + known +
                                   ")");
  }
  for (const std::string& v : values) {
    if (v.empty())
      return Status::InvalidArgument("bindings." + std::string(field) + ": empty metric name");
  }
  bindings_.emplace_back(std::string(field), std::move(values));
  return Status::Ok();
}

void DetectorSettings::ApplyTo(detect::DetectorOptions* options) const {
  for (const auto& [spec, v] : params_) {
    if (spec->real != nullptr)
      options->*spec->real = v;
    else if (spec->count != nullptr)
      options->*spec->count = static_cast<int64_t>(v);
    else
      options->*spec->flag = v != 0;
  }
  for (const auto& [field, values] : bindings_) {
    if (std::vector<std::string>* list = ListBinding(options->bindings, field))
      *list = values;
    else if (std::string* s = StringBinding(options->bindings, field))
      *s = values.front();
  }
}

bool DetectorSettings::empty() const {
  if (!params_.empty() || !bindings_.empty()) return false;
  for (const auto& e : enabled_) {
    if (e.has_value()) return false;
  }
  return true;
}

}  // namespace trainwatch::rules
