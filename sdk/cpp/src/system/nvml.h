// NVIDIA's management library (NVML), loaded at run time.
//
// The SDK never links NVML: machines without an NVIDIA driver must run it unchanged. Nvml::Open
// dlopens the library, resolves the few entry points the sampler needs and initializes NVML;
// without the library, a symbol, or a working driver, there is simply no Nvml.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace trainwatch::sdk {

// One GPU's readings; a value the driver did not report is nullopt.
struct GpuReading {
  std::optional<double> utilization_percent;  // of the last sample period the GPU was busy, 0..100
  std::optional<double> memory_used_bytes;
  std::optional<double> memory_total_bytes;
  std::optional<double> temperature_c;  // the GPU die
  std::optional<double> power_watts;    // the whole board
};

// A loaded, initialized NVML. Thread-compatible: Read() may be called from any one thread at a
// time (NVML itself is thread-safe, this class holds no mutable state after Open).
class Nvml {
 public:
  // Loads `library` (a name for the dynamic loader's search, or a path), resolves nvmlInit_v2,
  // nvmlShutdown, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2,
  // nvmlDeviceGetUtilizationRates, nvmlDeviceGetMemoryInfo, nvmlDeviceGetTemperature and
  // nvmlDeviceGetPowerUsage, initializes NVML and counts the devices. Returns nullptr if any step
  // fails, with the reason in *error (when not null).
  static std::unique_ptr<Nvml> Open(const std::string& library, std::string* error);

  // Shuts NVML down and unloads the library.
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // The devices NVML reported at Open.
  int device_count() const { return static_cast<int>(devices_.size()); }

  // Reads device `index` (0 <= index < device_count()). A call NVML fails leaves its value
  // nullopt; an out-of-range index or a device without a handle yields an empty reading.
  GpuReading Read(int index) const;

 private:
  struct Api;  // the resolved entry points
  Nvml(void* library_handle, std::unique_ptr<Api> api);

  void* library_handle_;  // from dlopen, owned: dlclose'd by the destructor
  std::unique_ptr<Api> api_;
  std::vector<void*> devices_;  // nvmlDevice_t per index; nullptr where no handle was returned
};

}  // namespace trainwatch::sdk
