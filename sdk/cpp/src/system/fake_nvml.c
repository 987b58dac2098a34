/* A stand-in for NVIDIA's libnvidia-ml.so.1, for tests: the entry points SystemSampler resolves,
 * reporting made-up GPUs with deterministic values.
 *
 * Environment, read on every call:
 *   FAKE_NVML_GPU_COUNT  number of GPUs (default 2)
 *   FAKE_NVML_FAIL       comma-separated calls that fail with NVML_ERROR_UNKNOWN: init, count,
 *                        handle, utilization, memory, temperature, power
 *
 * GPU i reports: utilization 10*i+5 %, memory 80 GiB total with (i+1) GiB used, temperature 40+i
 * degrees C, power (100+i) W (returned in milliwatts, as NVML does).
 *
 * fake_nvml_active_inits() returns nvmlInit_v2 calls not yet matched by nvmlShutdown. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t; /* an enum in nvml.h */
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;
typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_UNKNOWN = 999,
};
enum { NVML_TEMPERATURE_GPU = 0 };

static const unsigned long long kGiB = 1ull << 30;
static int active_inits = 0;

/* True if `call` is one of the comma-separated names in $FAKE_NVML_FAIL. */
static int ShouldFail(const char* call) {
  const char* list = getenv("FAKE_NVML_FAIL");
  size_t length = strlen(call);
  while (list != NULL && *list != '\0') {
    const char* end = strchr(list, ',');
    size_t item = end != NULL ? (size_t)(end - list) : strlen(list);
    if (item == length && strncmp(list, call, length) == 0) return 1;
    list = end != NULL ? end + 1 : NULL;
  }
  return 0;
}

static unsigned int GpuCount(void) {
  const char* count = getenv("FAKE_NVML_GPU_COUNT");
  return count != NULL ? (unsigned int)strtoul(count, NULL, 10) : 2u;
}

/* Handles are index + 1, so that no valid handle is NULL. Returns -1 for a bad handle. */
static long IndexOf(nvmlDevice_t device) {
  uintptr_t value = (uintptr_t)device;
  if (active_inits <= 0 || value == 0 || value > GpuCount()) return -1;
  return (long)(value - 1);
}

int fake_nvml_active_inits(void) { return active_inits; }

nvmlReturn_t nvmlInit_v2(void) {
  if (ShouldFail("init")) return NVML_ERROR_UNKNOWN;
  ++active_inits;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  if (active_inits <= 0) return NVML_ERROR_UNINITIALIZED;
  --active_inits;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (active_inits <= 0) return NVML_ERROR_UNINITIALIZED;
  if (ShouldFail("count")) return NVML_ERROR_UNKNOWN;
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *count = GpuCount();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (active_inits <= 0) return NVML_ERROR_UNINITIALIZED;
  if (ShouldFail("handle")) return NVML_ERROR_UNKNOWN;
  if (device == NULL || index >= GpuCount()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = (nvmlDevice_t)(uintptr_t)(index + 1);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  long i = IndexOf(device);
  if (i < 0 || utilization == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (ShouldFail("utilization")) return NVML_ERROR_UNKNOWN;
  utilization->gpu = (unsigned int)(10 * i + 5);
  utilization->memory = (unsigned int)(2 * i + 1);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  long i = IndexOf(device);
  if (i < 0 || memory == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (ShouldFail("memory")) return NVML_ERROR_UNKNOWN;
  memory->total = 80 * kGiB;
  memory->used = (unsigned long long)(i + 1) * kGiB;
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor, unsigned int* temperature) {
  long i = IndexOf(device);
  if (i < 0 || temperature == NULL || sensor != NVML_TEMPERATURE_GPU) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (ShouldFail("temperature")) return NVML_ERROR_UNKNOWN;
  *temperature = (unsigned int)(40 + i);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* milliwatts) {
  long i = IndexOf(device);
  if (i < 0 || milliwatts == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (ShouldFail("power")) return NVML_ERROR_UNKNOWN;
  *milliwatts = (unsigned int)((100 + i) * 1000);
  return NVML_SUCCESS;
}
