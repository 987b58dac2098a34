// system_probe: prints what the SDK's system sampler reads on this machine, one JSON object per
// sample, so that the sampler can be checked against a real machine's own tools (nvidia-smi,
// top) without a server or a training run.
//
//   system_probe [--samples N] [--interval SECONDS] [--nvml LIBRARY]
//
// The first line says how many GPUs NVML reported (or why it could not be loaded). Depends on
// nothing but the C++ runtime and the dynamic loader, so the binary can be carried to another
// machine as it is.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "system/system_sampler.h"

namespace {

double MonotonicSeconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

double UnixSeconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// A JSON string literal of `text` (names and error messages: printable ASCII in practice).
std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    out += c;
  }
  return out + "\"";
}

int Usage() {
  std::fprintf(stderr, "usage: system_probe [--samples N] [--interval SECONDS] [--nvml LIBRARY]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int samples = 5;
  double interval_seconds = 1;
  trainwatch::sdk::SystemSamplerOptions options;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--samples") == 0 && has_value) {
      samples = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--interval") == 0 && has_value) {
      interval_seconds = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--nvml") == 0 && has_value) {
      options.nvml_library = argv[++i];
    } else {
      return Usage();
    }
  }
  if (samples < 1 || !(interval_seconds > 0)) return Usage();

  trainwatch::sdk::SystemSampler sampler(options);
  std::printf("{\"gpus\":%d,\"nvml_error\":%s}\n", sampler.gpu_count(), Quoted(sampler.gpu_error()).c_str());
  for (int n = 0; n < samples; ++n) {
    if (n > 0) std::this_thread::sleep_for(std::chrono::duration<double>(interval_seconds));
    std::string line = "{\"time\":" + std::to_string(UnixSeconds());
    for (const auto& [name, value] : sampler.Sample(MonotonicSeconds())) {
      line += "," + Quoted(name) + ":" + std::to_string(value);
    }
    std::printf("%s}\n", line.c_str());
    std::fflush(stdout);
  }
  return 0;
}
