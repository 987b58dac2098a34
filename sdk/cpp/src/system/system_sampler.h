// SystemSampler: the machine's and this process's resource use, as named series.
//
// Each Sample() reads every source once and returns (name, value) pairs. The series, all under
// system/:
//
//   name                                       unit     source
//   system/cpu_percent                         %        /proc/stat "cpu" line: busy / total tick
//                                                       deltas, averaged over all cores (0..100)
//   system/process_cpu_percent                 %        /proc/<pid>/stat utime + stime deltas, in
//                                                       percent of one core (may exceed 100)
//   system/memory_used_bytes                   bytes    /proc/meminfo MemTotal - MemAvailable
//   system/memory_percent                      %        the same over MemTotal (0..100)
//   system/process_rss_bytes                   bytes    /proc/<pid>/status VmRSS, else statm
//   system/disk_read_bytes_per_second          B/s      /proc/diskstats sectors read * 512
//   system/disk_write_bytes_per_second         B/s      /proc/diskstats sectors written * 512
//   system/network_receive_bytes_per_second    B/s      /proc/net/dev received bytes
//   system/network_send_bytes_per_second       B/s      /proc/net/dev transmitted bytes
//   system/gpu/<i>/utilization_percent         %        NVML nvmlDeviceGetUtilizationRates .gpu
//   system/gpu/<i>/memory_used_bytes           bytes    NVML nvmlDeviceGetMemoryInfo .used
//   system/gpu/<i>/memory_percent              %        the same, .used / .total
//   system/gpu/<i>/temperature_c               deg C    NVML nvmlDeviceGetTemperature (GPU die)
//   system/gpu/<i>/power_watts                 W        NVML nvmlDeviceGetPowerUsage (board)
//
// Options choose among them: `machine` (cpu_percent, memory_*, disk_*, network_*: the machine's,
// which one rank per host of a distributed job logs), `gpus`, and with gpu_index >= 0 only that
// NVML device, named system/gpu/<name> without the index (a rank's own GPU: the same series name
// on every rank). system/process_* are always there.
//
// Disk rates are machine-wide over whole physical disks (partitions, loop/ram/zram and stacked
// dm-/md devices are left out; see ParseDiskstats); network rates are over every interface of the
// process's network namespace except lo. A disk or interface that appeared, vanished or whose
// counter went backwards between two samples is left out of that rate. <i> is NVML's device index.
//
// Rates (the two CPU percentages and the four bytes/s series) cover the time between the previous
// Sample() call and this one and need the source read at both; they are absent from the first call
// and whenever now_seconds did not advance. A source that cannot be read or parsed is skipped, as
// is any single NVML value the driver does not report.
//
// Thread-safety: not thread-safe (Sample() updates the previous reading); use from one thread or
// guard externally.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "system/proc_stats.h"

namespace trainwatch::sdk {

class Nvml;

struct SystemSamplerOptions {
  std::string proc_root = "/proc";                 // tests point this at a fake tree
  std::string nvml_library = "libnvidia-ml.so.1";  // dlopen'ed; absent => no GPU series, no error
  int pid = 0;                                     // 0: this process
  bool machine = true;  // the machine-wide series (see above); false: only process and GPU series
  bool gpus = true;     // false: no GPU series (NVML is not loaded)
  int gpu_index = -1;  // < 0: every GPU, as system/gpu/<i>/<name>; else that one, system/gpu/<name>
};

class SystemSampler {
 public:
  // Loads NVML (see Nvml::Open); failure only means there are no GPU series.
  explicit SystemSampler(SystemSamplerOptions options);
  ~SystemSampler();
  SystemSampler(const SystemSampler&) = delete;
  SystemSampler& operator=(const SystemSampler&) = delete;

  // Reads every source once; see the top of this file for the series and when each is present.
  // `now_seconds` is the sample's time on any clock that moves forward (rates divide by its
  // differences). Never fails and never throws: a source that cannot be read is skipped.
  std::vector<std::pair<std::string, double>> Sample(double now_seconds);

  int gpu_count() const;  // GPUs NVML reported at construction (0 without NVML)
  // Why NVML is unavailable ("loading libnvidia-ml.so.1: ...: cannot open shared object file"),
  // empty when it loaded.
  const std::string& gpu_error() const { return gpu_error_; }

 private:
  void AppendProcSeries(const ProcSnapshot& now, double elapsed_seconds,
                        std::vector<std::pair<std::string, double>>* out) const;
  void AppendGpuSeries(std::vector<std::pair<std::string, double>>* out) const;

  const SystemSamplerOptions options_;
  const double clock_ticks_per_second_;  // sysconf(_SC_CLK_TCK)
  const uint64_t page_size_bytes_;       // sysconf(_SC_PAGESIZE)
  std::unique_ptr<Nvml> nvml_;           // null without NVML
  std::string gpu_error_;
  bool has_previous_ = false;
  double previous_seconds_ = 0;
  ProcSnapshot previous_;
};

}  // namespace trainwatch::sdk
