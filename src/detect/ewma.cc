#include "detect/ewma.h"

#include <algorithm>
#include <cmath>

namespace trainwatch::detect {

void Ewma::Update(double x, int64_t steps) {
  ++n_;
  double a = std::min(a_max_, steps == 1 ? a_ : 1.0 - std::pow(1.0 - a_, static_cast<double>(steps)));
  double w = std::max(a, 1.0 / static_cast<double>(n_));
  if (n_ == 1) {
    m_ = x;
    return;
  }
  d_ += w * (std::abs(x - m_) - d_);
  m_ += w * (x - m_);
}

}  // namespace trainwatch::detect
