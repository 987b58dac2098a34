// Names that identify runs and series.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace trainwatch::storage {

struct RunKey {
  std::string project;
  std::string run;
  bool operator==(const RunKey&) const = default;
  auto operator<=>(const RunKey&) const = default;
};

// A series is (project, run, metric, rank). `rank` is the rank of a distributed run whose points
// these are (docs/distributed.md); 0 is the run-level series: a run that is not distributed, or a
// distributed run's rank 0 (its run-level view). Ranks share the run's metric names.
struct SeriesKey {
  std::string project;
  std::string run;
  std::string metric;
  uint32_t rank = 0;
  bool operator==(const SeriesKey&) const = default;
  RunKey run_key() const { return {project, run}; }
};

using SeriesId = uint64_t;

struct RunKeyHash {
  size_t operator()(const RunKey& k) const {
    return std::hash<std::string>()(k.project) * 31 ^ std::hash<std::string>()(k.run);
  }
};

}  // namespace trainwatch::storage
