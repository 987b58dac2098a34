#include "detect/ewma.h"

#include <cmath>

#include <gtest/gtest.h>

namespace trainwatch::detect {
namespace {

TEST(EwmaTest, WarmStartIsAPlainMean) {
  Ewma e(0.02);
  e.Update(1);
  e.Update(2);
  e.Update(3);
  EXPECT_EQ(e.count(), 3);
  EXPECT_DOUBLE_EQ(e.mean(), 2.0);
}

TEST(EwmaTest, FirstValueSetsTheMeanWithoutDeviation) {
  Ewma e(0.5);
  e.Update(7);
  EXPECT_DOUBLE_EQ(e.mean(), 7);
  EXPECT_DOUBLE_EQ(e.mad(), 0);
}

TEST(EwmaTest, StepAwareWeightMatchesRepeatedUpdates) {
  // After warm-up, one update covering 3 steps weighs like 1 - (1 - a)^3.
  Ewma a(0.1), b(0.1);
  for (int i = 0; i < 100; ++i) {
    a.Update(0);
    b.Update(0);
  }
  a.Update(1, 3);
  EXPECT_NEAR(a.mean(), 1 - std::pow(0.9, 3), 1e-12);
  b.Update(1);
  EXPECT_NEAR(b.mean(), 0.1, 1e-12);
}

TEST(EwmaTest, MadTracksDeviationAboutTheOldMean) {
  Ewma e(0.5);
  e.Update(0);
  e.Update(2);  // w = max(0.5, 1/2): d = 0.5 * |2 - 0|, m = 1
  EXPECT_DOUBLE_EQ(e.mad(), 1.0);
  EXPECT_DOUBLE_EQ(e.mean(), 1.0);
}

}  // namespace
}  // namespace trainwatch::detect
