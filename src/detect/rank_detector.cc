#include "detect/rank_detector.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "detect/inhibitor.h"

namespace trainwatch::detect {
namespace {

// The median of `values` without the one at index `skip` (the others of one rank); `lower` takes
// the lower of the two middle values when their count is even. `sorted` is `values` sorted.
double MedianOfOthers(const std::vector<double>& sorted, double own, bool lower = false) {
  // The others: `sorted` with one copy of `own` taken out.
  const size_t n = sorted.size() - 1;
  const size_t skip =
      static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), own) - sorted.begin());
  auto at = [&](size_t k) { return sorted[k < skip ? k : k + 1]; };
  if (n % 2 == 1) return at(n / 2);
  if (lower) return at(n / 2 - 1);
  return (at(n / 2 - 1) + at(n / 2)) / 2;
}

std::string RankName(uint32_t rank, const std::string& host) {
  return host.empty() ? Format("rank %u", rank) : Format("rank %u (%s)", rank, host.c_str());
}

}  // namespace

void RankDetector::Ring::Add(double v) {
  if (!(v > 0) || !std::isfinite(v)) return;
  values[next] = v;
  next = (next + 1) % kRing;
  count = std::min(count + 1, kRing);
}

double RankDetector::Ring::Median() const {
  if (count == 0) return NAN;
  std::array<double, kRing> copy = values;
  auto mid = copy.begin() + static_cast<std::ptrdiff_t>(count / 2);
  std::nth_element(copy.begin(), mid, copy.begin() + static_cast<std::ptrdiff_t>(count));
  return *mid;
}

RankDetector::Rank* RankDetector::SlotFor(const RankId& id) {
  auto it = slot_of_.find(id.rank);
  if (it == slot_of_.end()) {
    if (ranks_.size() >= kMaxRanks) return nullptr;
    it = slot_of_.emplace(id.rank, static_cast<uint32_t>(ranks_.size())).first;
    ranks_.emplace_back();
    ranks_.back().rank = id.rank;
  }
  Rank& r = ranks_[it->second];
  if (!id.host.empty() && id.host != r.host) r.host = std::string(id.host);
  if (id.world_size > 0) {
    r.world_size = id.world_size;
    world_size_ = std::max(world_size_, std::min<uint32_t>(id.world_size, kMaxRanks));
  }
  r.local_rank = id.local_rank;
  return &r;
}

double RankDetector::DeadThreshold(const Rank& r) const {
  if (r.heartbeat_interval > 0) return options_.dead_heartbeats * r.heartbeat_interval;
  const double interval = r.record_seconds.Median();
  return std::max(options_.rank_dead_floor,
                  std::isfinite(interval) ? options_.rank_dead_mult * interval : 0.0);
}

double RankDetector::StepSeconds() const {
  std::vector<double> medians;
  for (const Rank& r : ranks_) {
    double m = r.step_seconds.Median();
    if (std::isfinite(m)) medians.push_back(m);
  }
  if (medians.empty()) return NAN;
  auto mid = medians.begin() + static_cast<std::ptrdiff_t>(medians.size() / 2);
  std::nth_element(medians.begin(), mid, medians.end());
  return *mid;
}

void RankDetector::Emit(AlertKind kind, const Rank* rank, std::string_view metric, int64_t step,
                        double time, double value, std::string message, std::vector<Alert>* out) {
  Alert a;
  a.state = AlertState::kFiring;
  a.run = run_;
  a.kind = std::string(KindName(kind));
  a.metric = std::string(metric);
  a.step = step;
  a.time = time;
  a.value = value;
  a.severity = std::string(DefaultSeverity(kind));
  a.message = std::move(message);
  if (rank != nullptr) {
    a.rank = rank->rank;
    a.host = rank->host;
  }
  out->push_back(std::move(a));
}

void RankDetector::Resolve(AlertKind kind, const Rank* rank, std::string_view metric, int64_t step,
                           double time, std::vector<Alert>* out) {
  Emit(kind, rank, metric, step, time, 0,
       Format("%s cleared at step %lld", std::string(KindName(kind)).c_str(),
              static_cast<long long>(step)),
       out);
  out->back().state = AlertState::kResolved;
}

// ---------------------------------------------------------------------------------------------
// Rows and batches.

void RankDetector::Observe(const RankId& id, int64_t step, double time, double arrival,
                           MetricSpan metrics, std::vector<Alert>* out) {
  Rank* slot = SlotFor(id);
  if (slot == nullptr) return;
  Rank& r = *slot;
  const uint32_t index = slot_of_[id.rank];
  if (!std::isfinite(arrival)) arrival = time;
  r.finished = false;
  if (std::isfinite(arrival)) {
    r.last_seen = std::isfinite(r.last_seen) ? std::max(r.last_seen, arrival) : arrival;
    if (std::isfinite(time)) r.min_delay = std::min(r.min_delay, arrival - time);
  }
  if (!r.has_step || step > r.latest_step) {
    if (r.has_step && std::isfinite(time) && std::isfinite(r.latest_time) && time > r.latest_time) {
      const double dt = time - r.latest_time;
      r.record_seconds.Add(dt);
      r.step_seconds.Add(dt / static_cast<double>(step - r.latest_step));
    }
    if (r.has_step) r.step_gaps.Add(static_cast<double>(step - r.latest_step));
    r.has_step = true;
    r.latest_step = step;
    r.latest_time = time;
    r.last_advance = arrival;
    if (hang_open_ && step > hang_step_) {
      hang_open_ = false;
      Resolve(AlertKind::kCollectiveHang, nullptr, "", step, time, out);
    }
  } else if (step < r.latest_step) {
    // The rank resumed from a checkpoint: its steps start over below the old maximum.
    r.latest_step = step;
    r.latest_time = time;
    r.last_advance = arrival;
  }

  // What this row gives the cross-rank comparisons, and whether it is finite.
  StepCell* cell = nullptr;
  auto cell_for = [&]() -> StepCell& {
    if (cell == nullptr) cell = &pending_[step];
    return *cell;
  };
  std::string_view bad;
  for (const auto& [name, value] : metrics) {
    const bool eval = IsEvalMetric(name, options_.bindings);
    if (!std::isfinite(value)) {
      if (bad.empty() && (!eval || options_.nan_include_eval)) bad = name;
      continue;
    }
    const auto& ttc = options_.bindings.time_to_collective;
    if (std::find(ttc.begin(), ttc.end(), name) != ttc.end()) {
      cell_for().ttc.emplace_back(index, value);
      ++pending_values_;
    } else {
      const auto& rep = options_.bindings.replicated;
      if (std::find(rep.begin(), rep.end(), name) != rep.end()) {
        auto& values = cell_for().replicated[std::string(name)];
        values.emplace_back(index, value);
        ++pending_values_;
      }
    }
  }
  bool training = false;
  for (const auto& [name, value] : metrics) training |= !IsEvalMetric(name, options_.bindings);
  if (training || !bad.empty()) NanRow(r, step, time, arrival, bad, bad.empty(), out);
  while (pending_.size() > kMaxPendingSteps || pending_values_ > kMaxPendingValues) {
    // A rank far behind (not yet dead) holds the comparison back: compare the oldest with what it
    // has.
    auto oldest = pending_.begin();
    StepCell oldest_cell = std::move(oldest->second);
    const int64_t oldest_step = oldest->first;
    pending_.erase(oldest);
    CompareStep(oldest_step, oldest_cell, out);
  }
}

void RankDetector::Heard(const RankId& id, double arrival, double heartbeat_interval,
                         std::vector<Alert>* out) {
  Rank* slot = SlotFor(id);
  if (slot == nullptr) return;
  Rank& r = *slot;
  if (!std::isfinite(arrival)) arrival = r.latest_time;
  if (heartbeat_interval > 0) r.heartbeat_interval = heartbeat_interval;
  if (std::isfinite(arrival)) {
    // A batch of rows far older than the rank's usual delivery delay is a backlog (a spool being
    // uploaded after an outage): its step says nothing about where the rank is now.
    r.behind_late =
        std::isfinite(r.latest_time) && std::isfinite(r.min_delay) &&
        arrival - r.latest_time - r.min_delay > std::max(1.0, options_.desync_seconds) &&
        heartbeat_interval <= 0;
    r.last_seen = std::isfinite(r.last_seen) ? std::max(r.last_seen, arrival) : arrival;
  }
  if (r.dead_open) {
    r.dead_open = false;
    Resolve(AlertKind::kRankDead, &r, "", r.latest_step, r.latest_time, out);
  }
  if (r.has_step && !r.behind_late) Lag(r, out);
  CompleteSteps(false, out);
  ReleaseNan(false, arrival, out);
}

void RankDetector::Finished(uint32_t rank) {
  RankId id;
  id.rank = rank;
  if (Rank* r = SlotFor(id)) r->finished = true;
}

// ---------------------------------------------------------------------------------------------
// rank_desync: steps apart, and replicated metrics.

void RankDetector::Lag(Rank& r, std::vector<Alert>* out) {
  scratch_.clear();
  for (const Rank& q : ranks_) {
    if (&q != &r && Live(q)) scratch_.push_back(static_cast<double>(q.latest_step));
  }
  if (scratch_.empty()) return;
  // r was just heard from: its step is current. The others' are as of their last batch, so they
  // can only look behind, never ahead: a rank behind them is behind.
  scratch_.push_back(static_cast<double>(r.latest_step));
  std::sort(scratch_.begin(), scratch_.end());
  const double ref = MedianOfOthers(scratch_, static_cast<double>(r.latest_step), /*lower=*/true);
  const double behind = ref - static_cast<double>(r.latest_step);
  const double step_seconds = StepSeconds();
  const double interval = r.step_gaps.Median();
  const double tol =
      static_cast<double>(options_.desync_steps) +
      (std::isfinite(step_seconds) ? std::ceil(options_.desync_seconds / step_seconds) : 0.0) +
      (std::isfinite(interval) ? interval : 0.0);
  r.lag_holding = behind > tol / 2;
  if (behind > tol) {
    if (++r.lag_run >= options_.desync_persist && !r.desync_open) {
      r.desync_open = true;
      r.desync_clear = 0;
      Emit(AlertKind::kRankDesync, &r, "", r.latest_step, r.latest_time, behind,
           Format("%s is at step %lld, %.0f steps behind the other ranks (tolerance %.0f)",
                  RankName(r.rank, r.host).c_str(), static_cast<long long>(r.latest_step), behind,
                  tol),
           out);
    }
  } else {
    r.lag_run = 0;
  }
  DesyncObserved(r, r.latest_step, r.latest_time, out);
}

void RankDetector::DesyncObserved(Rank& r, int64_t step, double time, std::vector<Alert>* out) {
  if (!r.desync_open) return;
  if (r.lag_holding || r.metric_holding) {
    r.desync_clear = 0;
    return;
  }
  if (++r.desync_clear < std::max<int64_t>(1, options_.resolve_records)) return;
  r.desync_open = false;
  Resolve(AlertKind::kRankDesync, &r, "", step, time, out);
}

void RankDetector::ReplicatedMetric(int64_t step, const std::string& name,
                                    const std::vector<std::pair<uint32_t, double>>& values,
                                    std::vector<Alert>* out) {
  if (values.size() < 2) return;
  ReplicatedState& state = replicated_[name];
  if (state.state == Replication::kUnequal) return;
  scratch_.clear();
  for (const auto& [slot, v] : values) scratch_.push_back(v);
  std::sort(scratch_.begin(), scratch_.end());
  // The rank farthest from the median of the others (the later rank on a tie: with two ranks,
  // rank 0 is the reference).
  double worst = -1;
  uint32_t worst_slot = values.front().first;
  double worst_value = 0, worst_ref = 0;
  for (const auto& [slot, v] : values) {
    const double ref = MedianOfOthers(scratch_, v);
    const double dev = std::abs(v - ref) / std::max(std::abs(ref), 1e-12);
    const bool later = dev == worst && ranks_[slot].rank > ranks_[worst_slot].rank;
    if (dev > worst || later) {
      worst = dev;
      worst_slot = slot;
      worst_value = v;
      worst_ref = ref;
    }
  }
  if (state.state == Replication::kUnknown) {
    // Judged only once seen equal: a sharded model's (FSDP, tensor parallel) norms differ from the
    // start.
    state.state = worst <= options_.desync_rel ? Replication::kEqual : Replication::kUnequal;
    return;
  }
  Rank& r = ranks_[worst_slot];
  for (const auto& [slot, v] : values) {
    // Only the farthest rank is held; the others' verdicts clear.
    if (slot != worst_slot) ranks_[slot].metric_holding = false;
  }
  r.metric_holding = worst > options_.desync_rel / 2;
  if (worst > options_.desync_rel) {
    if (state.run++ == 0) state.onset = step;
    if (state.run >= options_.desync_persist && !r.desync_open) {
      r.desync_open = true;
      r.desync_clear = 0;
      Emit(AlertKind::kRankDesync, &r, name, state.onset, r.latest_time, worst,
           Format("%s on %s is %.6g, the other ranks' median %.6g (%.2g relative) on %lld steps in "
                  "a row: "
                  "the replicas diverged",
                  name.c_str(), RankName(r.rank, r.host).c_str(), worst_value, worst_ref, worst,
                  static_cast<long long>(state.run)),
           out);
    }
  } else {
    state.run = 0;
  }
  for (const auto& [slot, v] : values)
    DesyncObserved(ranks_[slot], step, ranks_[slot].latest_time, out);
}

// ---------------------------------------------------------------------------------------------
// Steps every rank has passed: straggler and replicated metrics.

void RankDetector::CompleteSteps(bool force_all, std::vector<Alert>* out) {
  if (pending_.empty()) return;
  // A step is complete once every live rank has sent a later one, and every rank of the world
  // size the ranks said has been seen (those not seen yet would have their say).
  std::optional<int64_t> horizon;
  size_t seen = 0;
  for (const Rank& r : ranks_) {
    seen += r.has_step;
    if (!Live(r)) continue;
    horizon = horizon ? std::min(*horizon, r.latest_step) : r.latest_step;
  }
  if (seen < world_size_) horizon.reset();
  while (!pending_.empty() && (force_all || (horizon && pending_.begin()->first < *horizon))) {
    auto first = pending_.begin();
    const int64_t step = first->first;
    StepCell cell = std::move(first->second);
    pending_.erase(first);
    CompareStep(step, cell, out);
  }
}

void RankDetector::CompareStep(int64_t step, const StepCell& cell, std::vector<Alert>* out) {
  size_t values = cell.ttc.size();
  for (const auto& [name, v] : cell.replicated) values += v.size();
  pending_values_ -= std::min(pending_values_, values);
  if (cell.ttc.size() >= 2) Straggler(step, cell.ttc, out);
  for (const auto& [name, values] : cell.replicated) ReplicatedMetric(step, name, values, out);
}

void RankDetector::Straggler(int64_t step, const std::vector<std::pair<uint32_t, double>>& values,
                             std::vector<Alert>* out) {
  scratch_.clear();
  for (const auto& [slot, v] : values) scratch_.push_back(v);
  std::sort(scratch_.begin(), scratch_.end());
  const double ratio = options_.straggler_ratio;
  const double margin = options_.straggler_min_seconds;
  for (const auto& [slot, v] : values) {
    Rank& r = ranks_[slot];
    const double ref = MedianOfOthers(scratch_, v);
    const bool over = v > ref * ratio && v - ref > margin;
    // Persistently: over on straggler_persist of the rank's last straggler_window steps (a slow
    // loader jitters too: one fast step in between does not start the count over).
    const int window = static_cast<int>(std::clamp<int64_t>(options_.straggler_window, 1, 32));
    r.straggler_bits = (r.straggler_bits << 1) | (over ? 1u : 0u);
    if (window < 32) r.straggler_bits &= (1u << window) - 1;
    r.straggler_steps[static_cast<size_t>(r.straggler_seen++ % 32)] = step;
    const int64_t count = std::popcount(r.straggler_bits);
    if (over && count >= options_.straggler_persist && !r.straggler_open) {
      // The onset: the oldest slow step in the window.
      int64_t onset = step;
      for (int k = 0; k < window && k < r.straggler_seen; ++k) {
        if (r.straggler_bits & (1u << k))
          onset = r.straggler_steps[static_cast<size_t>((r.straggler_seen - 1 - k) % 32)];
      }
      r.straggler_open = true;
      r.straggler_clear = 0;
      const std::string name = options_.bindings.time_to_collective.empty()
                                   ? std::string("dist/time_to_collective")
                                   : options_.bindings.time_to_collective.front();
      const double x = v / std::max(ref, 1e-12);
      Emit(AlertKind::kStraggler, &r, name, onset, r.latest_time, x,
           Format("%s takes %.3g s to its first collective, %.1fx the other ranks' median %.3g s, "
                  "on %lld of its last %d steps (since step %lld)",
                  RankName(r.rank, r.host).c_str(), v, x, ref, static_cast<long long>(count),
                  window, static_cast<long long>(onset)),
           out);
      out->back().evidence = Evidence{v, ref, x, static_cast<int64_t>(values.size() - 1)};
    }
    if (!r.straggler_open) continue;
    // Resolution: under half the ratio (log scale) or half the margin, resolve_records steps in a
    // row.
    const bool holding = v > ref * std::sqrt(ratio) && v - ref > margin / 2;
    if (holding) {
      r.straggler_clear = 0;
    } else if (++r.straggler_clear >= std::max<int64_t>(1, options_.resolve_records)) {
      r.straggler_open = false;
      Resolve(AlertKind::kStraggler, &r, "", step, r.latest_time, out);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// nan, attributed to the rank(s) that showed it first.

void RankDetector::NanRow(Rank& r, int64_t step, double time, double arrival, std::string_view bad,
                          bool finite, std::vector<Alert>* out) {
  const uint32_t slot = slot_of_[r.rank];
  if (nan_open_) {
    if (!finite) {
      r.finite_run = 0;
      nan_bad_.insert(slot);
    } else if (++r.finite_run >= std::max<int64_t>(1, options_.resolve_records)) {
      nan_bad_.erase(slot);
    }
    if (nan_bad_.empty()) {
      nan_open_ = false;
      Resolve(AlertKind::kNan, &ranks_[nan_slot_], nan_metric_, step, time, out);
    }
    return;
  }
  if (finite) return;
  r.finite_run = 0;
  if (!nan_step_ || step < *nan_step_) {
    nan_step_ = step;
    nan_ranks_.clear();
    nan_metric_ = std::string(bad);
    nan_time_ = time;
    if (!std::isfinite(nan_since_)) nan_since_ = arrival;
  }
  if (step == *nan_step_) nan_ranks_.insert(r.rank);
}

void RankDetector::ReleaseNan(bool timed_out, double now, std::vector<Alert>* out) {
  if (!nan_step_ || nan_open_) return;
  if (!timed_out) {
    // Every live rank has sent its rows up to the step: nobody showed it earlier.
    for (const Rank& r : ranks_) {
      if (Live(r) && r.latest_step < *nan_step_) return;
    }
  } else if (!(std::isfinite(nan_since_) && now - nan_since_ >= kNanWaitSeconds)) {
    return;
  }
  const uint32_t first = *nan_ranks_.begin();
  std::string list;
  for (uint32_t rank : nan_ranks_) list += (list.empty() ? "" : ",") + std::to_string(rank);
  const Rank& r = ranks_[slot_of_[first]];
  Emit(AlertKind::kNan, &r, nan_metric_, *nan_step_, nan_time_, 0,
       Format("non-finite value of %s, first on %s%s at step %lld", nan_metric_.c_str(),
              RankName(r.rank, r.host).c_str(),
              nan_ranks_.size() > 1 ? (" (and ranks " + list + ")").c_str() : "",
              static_cast<long long>(*nan_step_)),
       out);
  out->back().labels["ranks"] = list;
  nan_open_ = true;
  nan_slot_ = slot_of_[first];
  nan_bad_.clear();
  for (uint32_t rank : nan_ranks_) nan_bad_.insert(slot_of_[rank]);
  nan_step_.reset();
  nan_ranks_.clear();
  nan_since_ = NAN;
}

// ---------------------------------------------------------------------------------------------
// Time passing: rank_dead and collective_hang.

void RankDetector::Check(double now, std::vector<Alert>* out) {
  if (!std::isfinite(now) || ranks_.size() < 2) {
    ReleaseNan(true, now, out);
    return;
  }
  auto silent = [&](const Rank& r) {
    return !std::isfinite(r.last_seen) || now - r.last_seen >= DeadThreshold(r);
  };
  // The latest any rank was heard from: others "go on" when one was heard from at least half the
  // silent rank's threshold after it went quiet (ranks that all stop together are not dead ranks).
  double last_heard = -INFINITY;
  for (const Rank& r : ranks_) {
    if (!r.finished && std::isfinite(r.last_seen)) last_heard = std::max(last_heard, r.last_seen);
  }
  double max_dead_threshold = 0;
  for (Rank& r : ranks_) {
    if (r.finished || !r.has_step) continue;
    max_dead_threshold = std::max(max_dead_threshold, DeadThreshold(r));
    if (r.dead_open || !silent(r)) continue;
    const bool others_go_on =
        std::isfinite(r.last_seen) && last_heard - r.last_seen >= DeadThreshold(r) / 2;
    if (!others_go_on) continue;
    r.dead_open = true;
    const double gap = now - r.last_seen;
    Emit(AlertKind::kRankDead, &r, "", r.latest_step, r.latest_time, gap,
         Format("%s sent nothing (records or heartbeats) for %.1f s after step %lld while other "
                "ranks go on "
                "(threshold %.1f s)",
                RankName(r.rank, r.host).c_str(), gap, static_cast<long long>(r.latest_step),
                DeadThreshold(r)),
         out);
  }
  // The dead ranks no longer hold back the comparisons at one step.
  CompleteSteps(false, out);
  ReleaseNan(true, now, out);

  if (hang_open_) return;
  // collective_hang: every live rank at the same step (within one), no new step for long.
  std::optional<int64_t> lo, hi;
  double last_advance = -INFINITY;
  const Rank* cause = nullptr;
  for (const Rank& r : ranks_) {
    if (r.finished || !r.has_step) continue;
    if (r.dead_open) {
      if (cause == nullptr || r.rank < cause->rank) cause = &r;
      continue;
    }
    if (silent(r)) continue;
    lo = lo ? std::min(*lo, r.latest_step) : r.latest_step;
    hi = hi ? std::max(*hi, r.latest_step) : r.latest_step;
    if (std::isfinite(r.last_advance)) last_advance = std::max(last_advance, r.last_advance);
  }
  if (!lo || *hi - *lo > 1 || !std::isfinite(last_advance)) return;
  const double step_seconds = StepSeconds();
  const double threshold = std::max(
      {options_.hang_floor, std::isfinite(step_seconds) ? options_.hang_mult * step_seconds : 0.0,
       max_dead_threshold});
  const double gap = now - last_advance;
  if (gap < threshold) return;
  hang_open_ = true;
  hang_step_ = *hi;
  std::string message = Format(
      "every live rank stopped at step %lld: no new step for %.1f s (threshold %.1f s), "
      "while they are still heard from",
      static_cast<long long>(*hi), gap, threshold);
  if (cause != nullptr) message += ", after " + RankName(cause->rank, cause->host) + " died";
  Emit(AlertKind::kCollectiveHang, nullptr, "", *hi, NAN, gap, std::move(message), out);
  if (cause != nullptr) {
    out->back().labels["caused_by"] = "rank_dead";
    out->back().labels["cause_rank"] = std::to_string(cause->rank);
    if (!cause->host.empty()) out->back().labels["cause_host"] = cause->host;
  }
}

}  // namespace trainwatch::detect
