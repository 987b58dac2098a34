// DetectorOptions: every threshold of the streaming anomaly detectors and the metric-name bindings
// (docs/design/anomaly-detection.md). A plain value type; the defaults are the spec's. Counts in
// "records" are persistence counters; counts in "steps" are compared with step numbers.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace trainwatch::detect {

// Which metric plays which role. For every list the first name present in a record wins.
struct MetricBindings {
  std::vector<std::string> loss = {"loss", "train/loss", "train_loss"};
  // When no `loss` name is present: any training metric ending in this suffix (e.g. `ctc_loss`).
  std::string loss_fallback_suffix = "loss";
  std::vector<std::string> grad_norm = {"grad_norm", "train/grad_norm"};
  // Per-layer grad norms: every metric named <prefix><layer>.
  std::string layer_grad_norm_prefix = "grad_norm/";
  std::vector<std::string> lr = {"lr", "learning_rate", "train/lr"};
  std::vector<std::string> update_ratio = {"update_ratio"};
  std::vector<std::string> eval_loss = {"val_loss", "val/loss", "eval/loss", "eval_loss"};
  // A metric whose name starts with one of these words (followed by the end of the name or a
  // character that is not a letter or digit: `val_loss`, `eval/acc`, not `value_loss`) is an eval
  // metric; all others are training metrics.
  std::vector<std::string> eval_prefixes = {"val", "eval", "test", "valid", "validation", "dev"};
  // Distributed runs (RankDetector). The seconds from a step's start until the rank hands its
  // first gradient bucket to the all-reduce (straggler) ...
  std::vector<std::string> time_to_collective = {"dist/time_to_collective"};
  // ... and metrics that data parallelism keeps equal across ranks (rank_desync): each is judged
  // only once it has been seen equal across the ranks, so a sharded model's norms are left alone.
  std::vector<std::string> replicated = {"param_norm", "lr", "learning_rate"};
};

struct DetectorOptions {
  MetricBindings bindings;

  // Common machinery.
  int64_t warm = 50;  // steps of values a baseline needs before a baseline-based rule may fire ...
  int64_t warm_records =
      4;  // ... converted through the run's cadence, but never fewer records than this
  double a_slow = 0.02;  // EWMA weight per step of the slow baselines (time constant 50 steps) ...
  double a_record_max =
      0.2;              // ... but at most this per record (time constant >= 5 records when sparse)
  int64_t window = 20;  // records in the rolling robust windows (median, MAD) of loss and grad norm
  // Scales every ratio threshold on the log scale: 1 default, > 1 fewer alerts, < 1 earlier ones
  // (the alerting file's `sensitivity: low | default | high` = 1.5, 1, 0.7).
  double sensitivity = 1.0;

  // LR context.
  double shock_ratio = 3.0;        // lr > shock_ratio * lr_max opens an LR excursion ("shock")
  int64_t shock_window = 300;      // steps a shock stays open unclassified; loss_spike inhibited
  int64_t shock_min_records = 10;  // records before the shock rule applies (warm / 5)
  double restart_jump = 2.0;       // warm restart: lr > restart_jump * lr_prev ...
  double restart_known = 1.5;      // ... and lr <= restart_known * lr_max
  int64_t restart_window = 100;    // steps after a warm restart without loss_spike / divergence
  int64_t resume_window = 50;      // steps after a resume (step went back) likewise
  double lr_drop_ratio = 100.0;    // a one-record lr drop by this factor is a step drop

  // grad_explosion.
  double expl_ratio = 10.0;       // ln g - baseline > ln expl_ratio is a hit
  int64_t expl_persist = 3;       // hits needed ...
  int64_t expl_win = 5;           // ... in the last expl_win records (rule B)
  int64_t expl_shock_steps = 50;  // rule A: one hit within this many steps of a shock
  double expl_jump_ratio = 50.0;  // rule S: one record this far above the window's median

  // loss_spike.
  double spike_ratio = 2.0;  // thr = max(ln spike_ratio, spike_k * sigma) over the window's median
  double spike_k = 5.0;
  int64_t spike_min_records = 5;  // window values before the rule may fire

  // Shock classification and divergence.
  double osc_ratio = 2.0;  // variability ratio for loss_oscillation
  int64_t osc_age = 100;   // oscillation checked at shock age [osc_age, osc_age + osc_span]
  int64_t osc_span = 50;
  double div_rise = std::log(2.0);  // smoothed log-loss rise that counts as divergence
  int64_t div_persist =
      100;  // steps the generic rise must hold (in records: at least warm_records)
  int64_t div_warmup_records =
      3;  // a loss excursion held this many records while the lr kept rising
  double div_eval_ratio =
      2.0;  // eval loss this far above its best, with no training loss logged since
  double a_dif_base = 0.01;  // EWMA weights of |d ln L|: baseline and fast
  double a_dif_fast = 0.05;

  // grad_vanishing.
  double vanish_ratio = 100.0;
  int64_t vanish_persist = 5;

  // plateau.
  double plateau_ratio = 100.0;
  int64_t plateau_persist = 10;

  // overfitting.
  double of_rel = 0.05;         // eval loss rise of at least 5% ...
  int64_t of_k = 2;             // ... on this many consecutive evals ...
  double of_train_drop = 0.10;  // ... while train loss fell at least 10% since the eval minimum
  int64_t of_window = 6;        // only within this many evals after the minimum
  double of_a = 0.3;            // EWMA weight of the eval noise estimate
  double of_k_noise = 3.0;      // rise must also exceed of_k_noise * eval noise
  double of_smooth = 0.5;       // EWMA weight of the smoothed eval loss

  // stalled.
  double stall_floor = 300.0;  // seconds; thr = max(stall_floor, stall_mult * dt_max)
  double stall_mult = 10.0;

  // Incident resolution: an open incident resolves once its statistic has stayed under half its
  // threshold (log scale) for this many consecutive observations (`stalled`: at the next step).
  int64_t resolve_records = 10;

  // nan.
  int64_t dead_after = 3;         // consecutive non-finite training records: the run is dead
  bool nan_include_eval = false;  // non-finite eval metrics raise `nan` too

  // throughput_drop.
  double tp_ratio = 2.5;    // median step duration / baseline
  int64_t tp_win = 21;      // ring of per-step durations (median window)
  int64_t tp_persist = 20;  // consecutive records over the ratio
  double a_tp_base = 0.01;  // EWMA weight of the duration baseline

  // Distributed runs (RankDetector, docs/detectors.md "Distributed runs").
  // straggler: a rank's time to its first collective over the median of the other ranks' at the
  // same step, by both margins, on this many consecutive steps.
  double straggler_ratio = 2.0;
  double straggler_min_seconds = 0.02;
  int64_t straggler_persist = 6;
  int64_t straggler_window = 8;  // at most 32
  // rank_desync: a rank behind the others by more than desync_steps + the steps of
  // desync_seconds (+ one logging interval), when it is heard from, desync_persist times in a
  // row; or a replicated metric off the others' median by more than desync_rel (relative) on
  // desync_persist consecutive steps.
  int64_t desync_steps = 2;
  double desync_seconds = 1.0;
  double desync_rel = 1e-5;
  int64_t desync_persist = 3;
  // rank_dead: nothing from a rank (records or heartbeats) for dead_heartbeats heartbeat
  // intervals, or, without heartbeats, max(rank_dead_floor, rank_dead_mult x its record interval),
  // while another rank is still heard from.
  double dead_heartbeats = 3;
  double rank_dead_floor = 30.0;
  double rank_dead_mult = 10.0;
  // collective_hang: every live rank's last step the same (within 1) and no new step for
  // max(hang_floor, hang_mult x the step interval, every rank's rank_dead threshold).
  double hang_floor = 120.0;
  double hang_mult = 20.0;
};

}  // namespace trainwatch::detect
