// Test harness: feeds small runs, record by record, to a RunDetector the way the offline command
// does, and summarises the alerts as "kind@step" (detector scenario tests).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detect/run_detector.h"

namespace trainwatch::detect::scenarios {

using Metrics = std::vector<std::pair<std::string, double>>;

// Feeds records the way the offline command does: Observe only (a gap is judged when the next
// record shows it); CheckStalled plays the server's clock.
class Scenario {
 public:
  explicit Scenario(DetectorOptions options = {})
      : detector_(std::make_unique<RunDetector>("run", std::move(options))) {}

  void Add(int64_t step, double time, const Metrics& metrics) {
    std::vector<std::pair<std::string_view, double>> view;
    for (const auto& [n, v] : metrics) view.emplace_back(n, v);
    detector_->Observe(step, time, view, &alerts_);
  }
  void CheckStalled(double now) { detector_->CheckStalled(now, &alerts_); }

  // "kind@step" for each incident start, in order.
  std::vector<std::string> Summary() const { return Describe(AlertState::kFiring); }
  // "kind@step" for each incident end, in order.
  std::vector<std::string> Resolutions() const { return Describe(AlertState::kResolved); }
  std::vector<std::string> Kinds() const {
    std::vector<std::string> out;
    for (const Alert& a : alerts_) {
      if (a.state == AlertState::kFiring) out.push_back(a.kind);
    }
    return out;
  }
  const std::vector<Alert>& alerts() const { return alerts_; }

 private:
  std::vector<std::string> Describe(AlertState state) const {
    std::vector<std::string> out;
    for (const Alert& a : alerts_) {
      if (a.state == state) out.push_back(a.kind + "@" + std::to_string(a.step));
    }
    return out;
  }

  std::unique_ptr<RunDetector> detector_;  // owned; RunDetector is not movable
  std::vector<Alert> alerts_;
};

}  // namespace trainwatch::detect::scenarios
