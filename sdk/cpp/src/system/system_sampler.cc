#include "system/system_sampler.h"

#include <unistd.h>

#include <algorithm>
#include <optional>

#include "system/nvml.h"

namespace trainwatch::sdk {
namespace {

using Series = std::vector<std::pair<std::string, double>>;

constexpr char kCpuPercent[] = "system/cpu_percent";
constexpr char kProcessCpuPercent[] = "system/process_cpu_percent";
constexpr char kMemoryUsedBytes[] = "system/memory_used_bytes";
constexpr char kMemoryPercent[] = "system/memory_percent";
constexpr char kProcessRssBytes[] = "system/process_rss_bytes";
constexpr char kDiskReadBytesPerSecond[] = "system/disk_read_bytes_per_second";
constexpr char kDiskWriteBytesPerSecond[] = "system/disk_write_bytes_per_second";
constexpr char kNetworkReceiveBytesPerSecond[] = "system/network_receive_bytes_per_second";
constexpr char kNetworkSendBytesPerSecond[] = "system/network_send_bytes_per_second";
constexpr char kGpuPrefix[] = "system/gpu/";

constexpr double kPercent = 100.0;
constexpr double kDefaultClockTicksPerSecond = 100;  // USER_HZ on every Linux architecture
constexpr uint64_t kDefaultPageSizeBytes = 4096;

double SysconfOr(int name, double fallback) {
  long value = ::sysconf(name);
  return value > 0 ? static_cast<double>(value) : fallback;
}

// Bytes moved between two readings, summed over the devices present in both whose counters did
// not go backwards (a device that was reset or replaced says nothing about this interval).
std::optional<IoBytes> SumDeltas(const std::optional<IoBytesByDevice>& before,
                                 const std::optional<IoBytesByDevice>& after) {
  if (!before || !after) return std::nullopt;
  IoBytes sum;
  for (const auto& [name, now] : *after) {
    auto it = before->find(name);
    if (it == before->end()) continue;
    const IoBytes& then = it->second;
    if (now.read < then.read || now.write < then.write) continue;
    sum.read += now.read - then.read;
    sum.write += now.write - then.write;
  }
  return sum;
}

void AppendIoRates(const std::optional<IoBytesByDevice>& before,
                   const std::optional<IoBytesByDevice>& after, double elapsed_seconds,
                   const char* read_name, const char* write_name, Series* out) {
  std::optional<IoBytes> delta = SumDeltas(before, after);
  if (!delta) return;
  out->emplace_back(read_name, static_cast<double>(delta->read) / elapsed_seconds);
  out->emplace_back(write_name, static_cast<double>(delta->write) / elapsed_seconds);
}

}  // namespace

SystemSampler::SystemSampler(SystemSamplerOptions options)
    : options_(std::move(options)),
      clock_ticks_per_second_(SysconfOr(_SC_CLK_TCK, kDefaultClockTicksPerSecond)),
      page_size_bytes_(static_cast<uint64_t>(SysconfOr(_SC_PAGESIZE, kDefaultPageSizeBytes))) {
  if (options_.gpus) {
    nvml_ = Nvml::Open(options_.nvml_library, &gpu_error_);
  } else {
    gpu_error_ = "GPU series are off";
  }
}

SystemSampler::~SystemSampler() = default;

int SystemSampler::gpu_count() const { return nvml_ ? nvml_->device_count() : 0; }

Series SystemSampler::Sample(double now_seconds) {
  Series series;
  ProcSnapshot current = ReadProcSnapshot(options_.proc_root, options_.pid, page_size_bytes_);
  double elapsed_seconds = has_previous_ ? now_seconds - previous_seconds_ : 0;
  AppendProcSeries(current, elapsed_seconds, &series);
  AppendGpuSeries(&series);
  previous_ = std::move(current);
  previous_seconds_ = now_seconds;
  has_previous_ = true;
  return series;
}

void SystemSampler::AppendProcSeries(const ProcSnapshot& now, double elapsed_seconds,
                                     Series* out) const {
  // Rates only over a positive interval since a previous reading.
  const bool rates = has_previous_ && elapsed_seconds > 0;
  const ProcSnapshot& then = previous_;

  const bool machine = options_.machine;
  if (machine && rates && then.machine_cpu && now.machine_cpu &&
      now.machine_cpu->total_ticks > then.machine_cpu->total_ticks) {
    // Signed: iowait, hence busy, is known to step backwards on some kernels.
    double busy = static_cast<double>(now.machine_cpu->busy_ticks) -
                  static_cast<double>(then.machine_cpu->busy_ticks);
    double total =
        static_cast<double>(now.machine_cpu->total_ticks - then.machine_cpu->total_ticks);
    out->emplace_back(kCpuPercent, std::clamp(busy / total * kPercent, 0.0, kPercent));
  }
  if (rates && then.process_cpu_ticks && now.process_cpu_ticks &&
      *now.process_cpu_ticks >= *then.process_cpu_ticks) {
    double cpu_seconds = static_cast<double>(*now.process_cpu_ticks - *then.process_cpu_ticks) /
                         clock_ticks_per_second_;
    out->emplace_back(kProcessCpuPercent, cpu_seconds / elapsed_seconds * kPercent);
  }
  if (machine && now.memory) {
    uint64_t used = now.memory->total_bytes - now.memory->available_bytes;
    out->emplace_back(kMemoryUsedBytes, static_cast<double>(used));
    out->emplace_back(kMemoryPercent, static_cast<double>(used) /
                                          static_cast<double>(now.memory->total_bytes) * kPercent);
  }
  if (now.process_rss_bytes) {
    out->emplace_back(kProcessRssBytes, static_cast<double>(*now.process_rss_bytes));
  }
  if (machine && rates) {
    AppendIoRates(then.disks, now.disks, elapsed_seconds, kDiskReadBytesPerSecond,
                  kDiskWriteBytesPerSecond, out);
    AppendIoRates(then.network, now.network, elapsed_seconds, kNetworkReceiveBytesPerSecond,
                  kNetworkSendBytesPerSecond, out);
  }
}

void SystemSampler::AppendGpuSeries(Series* out) const {
  const bool one = options_.gpu_index >= 0;
  for (int i = one ? options_.gpu_index : 0; i < gpu_count(); ++i) {
    GpuReading gpu = nvml_->Read(i);
    std::string prefix = one ? std::string(kGpuPrefix) : kGpuPrefix + std::to_string(i) + "/";
    if (gpu.utilization_percent) {
      out->emplace_back(prefix + "utilization_percent", *gpu.utilization_percent);
    }
    if (gpu.memory_used_bytes) {
      out->emplace_back(prefix + "memory_used_bytes", *gpu.memory_used_bytes);
      if (gpu.memory_total_bytes && *gpu.memory_total_bytes > 0) {
        out->emplace_back(prefix + "memory_percent",
                          *gpu.memory_used_bytes / *gpu.memory_total_bytes * kPercent);
      }
    }
    if (gpu.temperature_c) out->emplace_back(prefix + "temperature_c", *gpu.temperature_c);
    if (gpu.power_watts) out->emplace_back(prefix + "power_watts", *gpu.power_watts);
    if (one) break;
  }
}

}  // namespace trainwatch::sdk
