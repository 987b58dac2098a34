#include "detect/grad_explosion.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace trainwatch::detect {

void GradExplosionDetector::Observe(int64_t step, double g, int64_t steps, int64_t warm,
                                    const std::optional<Shock>& shock, AlertSink& sink) {
  if (!std::isfinite(g) || g <= 0) return;
  double lg = std::log(g);
  last_lg_ = lg;
  const double limit = options_.sensitivity * std::log(options_.expl_ratio);
  window_.SetCapacity(options_.window);  // a rule reload may change it (no-op otherwise)
  const bool judged = window_.size() >= 2;
  const double med = judged ? window_.Median() : lg;
  if (judged && lg - med > options_.sensitivity * std::log(options_.expl_jump_ratio)) {
    double ratio = std::exp(lg - med);
    // One record is evidence enough, and it may be the whole episode: a transient incident that
    // does not silence the run's later training alerts.
    if (sink.EmitTransient(AlertKind::kGradExplosion, "grad_norm", step, ratio,
                           Format("grad norm %.4g is %.0fx the median %.4g of the last %zu logged values", g, ratio,
                                  std::exp(med), window_.size()),
                           Evidence{g, std::exp(med), ratio, static_cast<int64_t>(window_.size())})) {
      incident_ref_ = med;
    }
  }
  window_.Push(judged ? std::min(lg, med + limit) : lg);
  if (gn_.count() >= warm) {
    bool hit = lg - gn_.mean() > limit;
    const int64_t window = std::min<int64_t>(options_.expl_win, 32);
    uint32_t mask = window >= 32 ? ~0u : ((1u << window) - 1);
    hits_ = ((hits_ << 1) | (hit ? 1u : 0u)) & mask;
    if (shock && step - shock->step <= options_.expl_shock_steps && lg - shock->gn0 > limit) {
      double ratio = std::exp(lg - shock->gn0);
      if (sink.Emit(AlertKind::kGradExplosion, "grad_norm", step, ratio,
                    Format("grad norm %.1fx its level before the lr excursion at step %lld", ratio,
                           static_cast<long long>(shock->step)),
                    Evidence{g, std::exp(shock->gn0), ratio, 0})) {
        incident_ref_ = shock->gn0;
      }
    } else if (std::popcount(hits_) >= options_.expl_persist) {
      double ratio = std::exp(lg - gn_.mean());
      if (sink.Emit(AlertKind::kGradExplosion, "grad_norm", step, ratio,
                    Format("grad norm %.1fx its baseline on %d of the last %lld records", ratio,
                           std::popcount(hits_), static_cast<long long>(window)),
                    Evidence{g, std::exp(gn_.mean()), ratio, gn_.count()})) {
        incident_ref_ = gn_.mean();
      }
    }
    if (hit) lg = gn_.mean() + limit;  // winsorise the baseline update
  }
  gn_.Update(lg, steps);
}

}  // namespace trainwatch::detect
