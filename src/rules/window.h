// MetricWindow: the last values of one metric in one run and the windowed statistics rules ask for
// (mean, sum, max, min, delta over the last N values). Every Push and every Value is O(1)
// amortised; memory is O(largest N) doubles for the ring plus O(N) per max/min.
//
// Non-finite values: NaN is skipped by mean/sum/max/min (it still occupies one of the N places), so
// one NaN batch does not blind a window for N records; +/-inf take part (mean of a window holding
// +inf is +inf). A window with no non-NaN value yields NaN. delta(N) is NaN until N + 1 values have
// been pushed, and NaN when either end is NaN.
//
// Thread-safety: none; owned by one RunRuleEvaluator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

namespace trainwatch::rules {

enum class WindowFn { kMean, kSum, kMax, kMin, kDelta };

// The largest N a rule may ask for (validated by the expression parser).
inline constexpr int64_t kMaxWindow = 100000;

class MetricWindow {
 public:
  MetricWindow() = default;

  // Registers a statistic and returns its handle for Value(). Registering the same (fn, n) twice
  // returns the same handle; mean and sum over the same n share their state. n in [1, kMaxWindow].
  // Register everything before the first Push (a later registration sees only later values, apart
  // from what CopyValuesFrom replays).
  size_t Add(WindowFn fn, int64_t n);

  // Appends the metric's newest value.
  void Push(double v);
  // The statistic over the values pushed so far (at most its n newest ones).
  double Value(size_t handle) const;
  // Forgets every value (a resumed run); the registered statistics stay.
  void Clear();
  // Pushes the values `from` still holds, oldest first, as many as this window can use. Used when
  // a reloaded rule file keeps a metric's window.
  void CopyValuesFrom(const MetricWindow& from);

  bool has_stats() const { return !stats_.empty(); }
  int64_t pushed() const { return pushed_; }
  size_t capacity() const { return capacity_; }

 private:
  // Running sum of the finite values of the last n (Neumaier-compensated, recomputed exactly every
  // n pushes so no drift accumulates), with counts of the non-finite ones.
  struct SumState {
    int64_t n = 0;
    double sum = 0, comp = 0;
    int64_t nan = 0, pos_inf = 0, neg_inf = 0;
    int64_t since_exact = 0;
  };
  // Monotonic deque of (sequence number, value): the front is the max (or min) of the last n.
  struct ExtremeState {
    int64_t n = 0;
    bool is_max = true;
    std::deque<std::pair<int64_t, double>> q;
  };
  struct Stat {
    WindowFn fn;
    int64_t n;
    size_t state;  // index into sums_ or extremes_ (unused for delta)
  };

  // The value `back` places before the newest (0 = newest); requires back < held().
  double Back(size_t back) const;
  size_t held() const { return ring_.size(); }
  void AddToSum(SumState& s, double v, int sign);
  void RecomputeSum(SumState& s);
  double SumOf(const SumState& s, bool mean) const;

  std::vector<Stat> stats_;
  std::vector<SumState> sums_;
  std::vector<ExtremeState> extremes_;
  size_t capacity_ = 0;       // ring size the statistics need
  std::vector<double> ring_;  // grows to capacity_, then wraps
  size_t head_ = 0;           // next slot to write once the ring is full
  int64_t pushed_ = 0;
};

}  // namespace trainwatch::rules
