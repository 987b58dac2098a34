#include "common/metrics_registry.h"

#include <cmath>
#include <cstdio>

namespace trainwatch {

void Histogram::Observe(double seconds) {
  size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_micros_.fetch_add(static_cast<uint64_t>(std::max(0.0, seconds) * 1e6),
                        std::memory_order_relaxed);
}

void Histogram::Snapshot(std::array<uint64_t, kBounds.size() + 1>* cumulative, double* sum) const {
  uint64_t running = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    (*cumulative)[i] = running;
  }
  *sum = sum_micros_.load(std::memory_order_relaxed) / 1e6;
}

Counter& MetricsRegistry::AddCounter(const std::string& name, const std::string& help,
                                     const std::string& labels) {
  auto entry = std::make_unique<Entry>();
  entry->name = name;
  entry->help = help;
  entry->labels = labels;
  entry->type = "counter";
  entry->counter = std::make_unique<Counter>();
  Counter& counter = *entry->counter;
  MutexLock lock(mu_);
  entries_.push_back(std::move(entry));
  return counter;
}

Histogram& MetricsRegistry::AddHistogram(const std::string& name, const std::string& help,
                                         const std::string& labels) {
  auto entry = std::make_unique<Entry>();
  entry->name = name;
  entry->help = help;
  entry->labels = labels;
  entry->type = "histogram";
  entry->histogram = std::make_unique<Histogram>();
  Histogram& histogram = *entry->histogram;
  MutexLock lock(mu_);
  entries_.push_back(std::move(entry));
  return histogram;
}

void MetricsRegistry::AddGauge(const std::string& name, const std::string& help,
                               std::function<double()> read) {
  auto entry = std::make_unique<Entry>();
  entry->name = name;
  entry->help = help;
  entry->type = "gauge";
  entry->gauge = std::move(read);
  MutexLock lock(mu_);
  entries_.push_back(std::move(entry));
}

namespace {

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string WithLabels(const std::string& labels, const std::string& extra = "") {
  std::string all = labels;
  if (!extra.empty()) all += (all.empty() ? "" : ",") + extra;
  return all.empty() ? "" : "{" + all + "}";
}

}  // namespace

std::string MetricsRegistry::Render() const {
  MutexLock lock(mu_);
  std::string out;
  std::string last_name;
  for (const auto& e : entries_) {
    if (e->name != last_name) {
      out += "# HELP " + e->name + " " + e->help + "\n# TYPE " + e->name + " " + e->type + "\n";
      last_name = e->name;
    }
    if (e->counter) {
      out += e->name + WithLabels(e->labels) + " " + std::to_string(e->counter->Value()) + "\n";
    } else if (e->gauge) {
      out += e->name + WithLabels(e->labels) + " " + FormatValue(e->gauge()) + "\n";
    } else if (e->histogram) {
      std::array<uint64_t, Histogram::kBounds.size() + 1> cumulative;
      double sum = 0;
      e->histogram->Snapshot(&cumulative, &sum);
      for (size_t i = 0; i < Histogram::kBounds.size(); ++i) {
        out += e->name + "_bucket" +
               WithLabels(e->labels, "le=\"" + FormatValue(Histogram::kBounds[i]) + "\"") + " " +
               std::to_string(cumulative[i]) + "\n";
      }
      out += e->name + "_bucket" + WithLabels(e->labels, "le=\"+Inf\"") + " " +
             std::to_string(cumulative.back()) + "\n";
      out += e->name + "_sum" + WithLabels(e->labels) + " " + FormatValue(sum) + "\n";
      out += e->name + "_count" + WithLabels(e->labels) + " " + std::to_string(cumulative.back()) +
             "\n";
    }
  }
  return out;
}

}  // namespace trainwatch
