// RecordLayout: which metric of a record plays which role (loss, lr, grad norm, per-layer grad
// norms, eval loss) and which are eval metrics. Consecutive records of a run almost always carry
// the same metric names, so the roles are resolved once per distinct list of names and reused:
// per record the cost is one comparison of the names with the previous record's. (Never by
// address: a freed name's memory may hold another name of the same length in the next record.)
//
// Thread-safety: none; owned by one RunDetector.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "detect/metric_bindings.h"
#include "detect/options.h"

namespace trainwatch::detect {

class RecordLayout {
 public:
  static constexpr int kNone = -1;

  // Resolves the roles of `metrics` unless its names equal the previous record's.
  void Update(MetricSpan metrics, const MetricBindings& bindings);
  // Forces the next Update to resolve again (the bindings changed).
  void Invalidate() { names_.clear(); ++version_; }

  // Indexes into the record. Roles other than eval_loss are looked up among training metrics.
  const std::vector<int>& train() const { return train_; }
  const std::vector<int>& layers() const { return layers_; }  // per-layer grad norms (training)
  int loss = kNone, grad_norm = kNone, lr = kNone, update_ratio = kNone, eval_loss = kNone;
  // Changes whenever the roles were resolved again: callers caching per-index state compare it.
  uint64_t version() const { return version_; }

 private:
  bool Same(MetricSpan metrics) const;
  void Resolve(MetricSpan metrics, const MetricBindings& bindings);

  std::vector<std::string> names_;  // of the record the roles were resolved for
  std::vector<int> train_, layers_;
  uint64_t version_ = 0;
};

}  // namespace trainwatch::detect
