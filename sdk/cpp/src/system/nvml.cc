#include "system/nvml.h"

#include <dlfcn.h>

#include <utility>

namespace trainwatch::sdk {
namespace {

// The slice of the NVML C API used here, declared by hand so that neither the header nor the
// library is needed to build. As in the NVML API reference (docs.nvidia.com/deploy/nvml-api):
//   typedef enum nvmlReturn_enum { NVML_SUCCESS = 0, ... } nvmlReturn_t;
//   typedef struct nvmlDevice_st* nvmlDevice_t;
//   typedef struct nvmlUtilization_st { unsigned int gpu; unsigned int memory; } nvmlUtilization_t;
//   typedef struct nvmlMemory_st { unsigned long long total, free, used; } nvmlMemory_t;
//   typedef enum nvmlTemperatureSensors_enum { NVML_TEMPERATURE_GPU = 0, ... } ...;
// Enums are passed as int (the C ABI of these enums). Power usage is in milliwatts, temperature
// in degrees Celsius, utilization in percent of the last sample period.
using nvmlReturn_t = int;
constexpr nvmlReturn_t kNvmlSuccess = 0;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr int kNvmlTemperatureGpu = 0;
constexpr double kMilliwattsPerWatt = 1000.0;

// Looks up `name` in `handle` as a function of type Fn; false if absent.
template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* out) {
  void* symbol = ::dlsym(handle, name);
  if (symbol == nullptr) return false;
  *out = reinterpret_cast<Fn>(symbol);
  return true;
}

void SetError(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
}

}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*get_count)(unsigned int*) = nullptr;
  nvmlReturn_t (*get_handle)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*get_utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*get_memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*get_temperature)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*get_power)(nvmlDevice_t, unsigned int*) = nullptr;

  // Resolves every entry point; the name of the first one missing, or nullptr if none is.
  const char* ResolveAll(void* handle) {
    if (!Resolve(handle, "nvmlInit_v2", &init)) return "nvmlInit_v2";
    if (!Resolve(handle, "nvmlShutdown", &shutdown)) return "nvmlShutdown";
    if (!Resolve(handle, "nvmlDeviceGetCount_v2", &get_count)) return "nvmlDeviceGetCount_v2";
    if (!Resolve(handle, "nvmlDeviceGetHandleByIndex_v2", &get_handle)) {
      return "nvmlDeviceGetHandleByIndex_v2";
    }
    if (!Resolve(handle, "nvmlDeviceGetUtilizationRates", &get_utilization)) {
      return "nvmlDeviceGetUtilizationRates";
    }
    if (!Resolve(handle, "nvmlDeviceGetMemoryInfo", &get_memory)) return "nvmlDeviceGetMemoryInfo";
    if (!Resolve(handle, "nvmlDeviceGetTemperature", &get_temperature)) {
      return "nvmlDeviceGetTemperature";
    }
    if (!Resolve(handle, "nvmlDeviceGetPowerUsage", &get_power)) return "nvmlDeviceGetPowerUsage";
    return nullptr;
  }
};

std::unique_ptr<Nvml> Nvml::Open(const std::string& library, std::string* error) {
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = ::dlerror();
    SetError(error, "loading " + library + ": " + (reason != nullptr ? reason : "dlopen failed"));
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  if (const char* missing = api->ResolveAll(handle)) {
    SetError(error, library + " lacks " + missing);
    ::dlclose(handle);
    return nullptr;
  }
  if (nvmlReturn_t rc = api->init(); rc != kNvmlSuccess) {
    SetError(error, "nvmlInit_v2 returned " + std::to_string(rc));
    ::dlclose(handle);
    return nullptr;
  }
  // From here on the destructor shuts NVML down and unloads it.
  std::unique_ptr<Nvml> nvml(new Nvml(handle, std::move(api)));
  unsigned int count = 0;
  if (nvmlReturn_t rc = nvml->api_->get_count(&count); rc != kNvmlSuccess) {
    SetError(error, "nvmlDeviceGetCount_v2 returned " + std::to_string(rc));
    return nullptr;
  }
  nvml->devices_.resize(count, nullptr);
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t device = nullptr;
    if (nvml->api_->get_handle(i, &device) == kNvmlSuccess) nvml->devices_[i] = device;
  }
  return nvml;
}

Nvml::Nvml(void* library_handle, std::unique_ptr<Api> api)
    : library_handle_(library_handle), api_(std::move(api)) {}

Nvml::~Nvml() {
  api_->shutdown();
  ::dlclose(library_handle_);
}

GpuReading Nvml::Read(int index) const {
  GpuReading reading;
  if (index < 0 || index >= device_count() || devices_[index] == nullptr) return reading;
  auto device = static_cast<nvmlDevice_t>(devices_[index]);

  nvmlUtilization_t utilization{};
  if (api_->get_utilization(device, &utilization) == kNvmlSuccess) {
    reading.utilization_percent = utilization.gpu;
  }
  nvmlMemory_t memory{};
  if (api_->get_memory(device, &memory) == kNvmlSuccess) {
    reading.memory_used_bytes = static_cast<double>(memory.used);
    reading.memory_total_bytes = static_cast<double>(memory.total);
  }
  unsigned int temperature = 0;
  if (api_->get_temperature(device, kNvmlTemperatureGpu, &temperature) == kNvmlSuccess) {
    reading.temperature_c = temperature;
  }
  unsigned int milliwatts = 0;
  if (api_->get_power(device, &milliwatts) == kNvmlSuccess) {
    reading.power_watts = milliwatts / kMilliwattsPerWatt;
  }
  return reading;
}

}  // namespace trainwatch::sdk
