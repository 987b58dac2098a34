// The server's YAML configuration (`trainwatch serve --config FILE`, src/server/config.h): the
// input is written to a temporary file and read by LoadServerConfig({"--config", file}), as main
// does. The TRAINWATCH_* environment is cleared first, so that only the file counts.
//
// Checks, besides memory safety and no exception escaping: a failure has a message; a success
// gives a usable configuration (a data directory, at least one HTTP thread).
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_support.h"
#include "server/config.h"

namespace {

std::string& ConfigPath() {
  static std::string path = "/tmp/tw_fuzz_config_" + std::to_string(getpid()) + ".yml";
  return path;
}

void RemoveConfig() { std::remove(ConfigPath().c_str()); }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  trainwatch::fuzz::ClearTrainwatchEnvironment();
  std::atexit(RemoveConfig);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = ConfigPath();
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) std::abort();
  for (size_t done = 0; done < size;) {
    ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  close(fd);

  auto config = trainwatch::server::LoadServerConfig({"--config", path});
  if (!config.ok()) {
    FUZZ_CHECK(!config.status().message().empty(), "an error without a message");
    return 0;
  }
  FUZZ_CHECK(!config->data_dir.empty(), "empty data directory");
  FUZZ_CHECK(config->http_threads >= 1, "http_threads " + std::to_string(config->http_threads));
  return 0;
}
