#include "system/system_sampler.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

namespace trainwatch::sdk {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Key;
using ::testing::Not;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

constexpr char kFakeNvml[] = TW_FAKE_NVML_PATH;
constexpr char kNoLibrary[] = "/nonexistent/libnvidia-ml.so.1";
constexpr double kGiB = 1ull << 30;

// Series as a map, failing the test on a duplicate name.
std::map<std::string, double> ToMap(const std::vector<std::pair<std::string, double>>& series) {
  std::map<std::string, double> map;
  for (const auto& [name, value] : series) {
    EXPECT_TRUE(map.emplace(name, value).second) << "duplicate series " << name;
  }
  return map;
}

// A fresh directory, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tw_system_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

  // Writes `content` to path()/relative, creating directories as needed.
  void Write(const std::string& relative, const std::string& content) const {
    std::filesystem::path file = std::filesystem::path(path_) / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::trunc) << content;
  }

 private:
  std::string path_;
};

// Sets (or with nullopt unsets) an environment variable for its lifetime.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old;
    Set(value);
  }
  ~ScopedEnv() { Set(old_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void Set(const std::optional<std::string>& value) {
    if (value) {
      ::setenv(name_, value->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  const char* name_;
  std::optional<std::string> old_;
};

// ---------------------------------------------------------------------------------------------
// A fake /proc with two readings, two seconds apart.

constexpr int kPid = 4242;
const long kTicks = ::sysconf(_SC_CLK_TCK);

std::string ProcessStat(long utime, long stime) {
  return "4242 (python3 (train) x) S 1 4242 4242 0 -1 4194304 100 0 0 0 " + std::to_string(utime) +
         " " + std::to_string(stime) + " 0 0 20 0 8 0 12345 1 2 3\n";
}

std::string Disk(int major, int minor, const std::string& name, long sectors_read,
                 long sectors_written) {
  return std::to_string(major) + " " + std::to_string(minor) + " " + name + " 10 0 " +
         std::to_string(sectors_read) + " 5 20 0 " + std::to_string(sectors_written) +
         " 7 0 9 12 0 0 0 0 0 0\n";
}

std::string Interface(const std::string& name, long received, long sent) {
  return "  " + name + ": " + std::to_string(received) + " 10 0 0 0 0 0 0 " + std::to_string(sent) +
         " 20 0 0 0 0 0 0\n";
}

constexpr char kNetDevHeader[] =
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop "
    "fifo colls carrier compressed\n";

void WriteFirstReading(const TempDir& proc) {
  // total 1000 ticks, idle + iowait 850.
  proc.Write("stat", "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\n");
  proc.Write("4242/stat", ProcessStat(1000, 500));
  proc.Write("meminfo",
             "MemTotal:       16000000 kB\nMemFree:         1000000 kB\n"
             "MemAvailable:    4000000 kB\nBuffers:          100000 kB\n");
  proc.Write("4242/status", "Name:\tpython3\nVmPeak:\t  999999 kB\nVmRSS:\t  204800 kB\n");
  proc.Write("diskstats", Disk(8, 0, "sda", 1000, 2000) + Disk(8, 1, "sda1", 500, 500) +
                              Disk(259, 0, "nvme0n1", 4000, 8000) +
                              Disk(259, 1, "nvme0n1p1", 100, 100) + Disk(259, 9, "nvme0n10", 0, 0) +
                              Disk(7, 0, "loop0", 10, 10) + Disk(1, 0, "ram0", 10, 10) +
                              Disk(253, 0, "dm-0", 10, 10));
  proc.Write("net/dev", std::string(kNetDevHeader) + Interface("lo", 5000, 5000) +
                            Interface("eth0", 100000, 200000) + Interface("wlan0", 0, 0) +
                            Interface("eth1", 900000, 900000));
}

void WriteSecondReading(const TempDir& proc) {
  // total +800 ticks (guest 77 not counted again), busy +250: 31.25 %.
  proc.Write("stat", "cpu  300 0 100 1300 100 0 0 0 77 0\ncpu0 150 0 50 650 50 0 0 0 40 0\n");
  // +1 s user, +0.5 s system over 2 s: 75 % of a core.
  proc.Write("4242/stat", ProcessStat(1000 + kTicks, 500 + kTicks / 2));
  proc.Write("meminfo",
             "MemTotal:       16000000 kB\nMemFree:         2000000 kB\n"
             "MemAvailable:    8000000 kB\nBuffers:          100000 kB\n");
  proc.Write("4242/status", "Name:\tpython3\nVmPeak:\t  999999 kB\nVmRSS:\t  307200 kB\n");
  // Whole disks: read +2048 +8192 +2048 sectors (6 MiB), written +4096 +0 +2048 (3 MiB).
  // Partitions, loop, ram and dm grow wildly and must not count.
  proc.Write("diskstats",
             Disk(8, 0, "sda", 1000 + 2048, 2000 + 4096) +
                 Disk(8, 1, "sda1", 500 + 999999, 500 + 999999) +
                 Disk(259, 0, "nvme0n1", 4000 + 8192, 8000) +
                 Disk(259, 1, "nvme0n1p1", 100 + 999999, 100 + 999999) +
                 Disk(259, 9, "nvme0n10", 2048, 2048) + Disk(7, 0, "loop0", 999999, 999999) +
                 Disk(1, 0, "ram0", 999999, 999999) + Disk(253, 0, "dm-0", 999999, 999999) +
                 Disk(8, 16, "sdb", 999999, 999999));  // new: no delta
  // eth0 +1000000 / +400000, wlan0 +200000 / 0; lo grows, eth1 was reset, docker0 is new.
  proc.Write("net/dev", std::string(kNetDevHeader) + Interface("lo", 99999999, 99999999) +
                            Interface("eth0", 1100000, 600000) + Interface("wlan0", 200000, 0) +
                            Interface("eth1", 10, 10) + Interface("docker0", 5555555, 5555555));
}

SystemSamplerOptions FakeProcOptions(const TempDir& proc) {
  return SystemSamplerOptions{.proc_root = proc.path(), .nvml_library = kNoLibrary, .pid = kPid};
}

TEST(SystemSamplerTest, FirstCallHasLevelsButNoRates) {
  TempDir proc;
  WriteFirstReading(proc);
  SystemSampler sampler(FakeProcOptions(proc));
  std::map<std::string, double> series = ToMap(sampler.Sample(100));
  EXPECT_THAT(series,
              UnorderedElementsAre(Key("system/memory_used_bytes"), Key("system/memory_percent"),
                                   Key("system/process_rss_bytes")));
  EXPECT_EQ(series["system/memory_used_bytes"], 12000000.0 * 1024);
  EXPECT_EQ(series["system/memory_percent"], 75.0);
  EXPECT_EQ(series["system/process_rss_bytes"], 204800.0 * 1024);
}

TEST(SystemSamplerTest, SecondCallComputesRatesOverTheInterval) {
  TempDir proc;
  WriteFirstReading(proc);
  SystemSampler sampler(FakeProcOptions(proc));
  (void)sampler.Sample(100);
  WriteSecondReading(proc);
  std::map<std::string, double> series = ToMap(sampler.Sample(102));

  EXPECT_THAT(series, UnorderedElementsAre(
                          Key("system/cpu_percent"), Key("system/process_cpu_percent"),
                          Key("system/memory_used_bytes"), Key("system/memory_percent"),
                          Key("system/process_rss_bytes"), Key("system/disk_read_bytes_per_second"),
                          Key("system/disk_write_bytes_per_second"),
                          Key("system/network_receive_bytes_per_second"),
                          Key("system/network_send_bytes_per_second")));
  EXPECT_DOUBLE_EQ(series["system/cpu_percent"], 31.25);
  EXPECT_DOUBLE_EQ(series["system/process_cpu_percent"], 75.0);
  EXPECT_EQ(series["system/memory_used_bytes"], 8000000.0 * 1024);
  EXPECT_EQ(series["system/memory_percent"], 50.0);
  EXPECT_EQ(series["system/process_rss_bytes"], 307200.0 * 1024);
  EXPECT_EQ(series["system/disk_read_bytes_per_second"], 3.0 * 1024 * 1024);
  EXPECT_EQ(series["system/disk_write_bytes_per_second"], 1.5 * 1024 * 1024);
  EXPECT_EQ(series["system/network_receive_bytes_per_second"], 600000.0);
  EXPECT_EQ(series["system/network_send_bytes_per_second"], 200000.0);
}

TEST(SystemSamplerTest, WithoutMachineSeriesOnlyTheProcessIsSampled) {
  TempDir proc;
  WriteFirstReading(proc);
  SystemSamplerOptions options = FakeProcOptions(proc);
  options.machine = false;  // a rank that is not its host's local rank 0
  SystemSampler sampler(options);
  (void)sampler.Sample(100);
  WriteSecondReading(proc);
  EXPECT_THAT(ToMap(sampler.Sample(102)), UnorderedElementsAre(Key("system/process_cpu_percent"),
                                                               Key("system/process_rss_bytes")));
}

TEST(SystemSamplerTest, NoRatesWhenTimeDoesNotAdvance) {
  TempDir proc;
  WriteFirstReading(proc);
  SystemSampler sampler(FakeProcOptions(proc));
  (void)sampler.Sample(100);
  WriteSecondReading(proc);
  std::map<std::string, double> series = ToMap(sampler.Sample(100));
  EXPECT_THAT(series,
              UnorderedElementsAre(Key("system/memory_used_bytes"), Key("system/memory_percent"),
                                   Key("system/process_rss_bytes")));
}

TEST(SystemSamplerTest, UnreadableSourcesAreSkipped) {
  TempDir proc;
  WriteFirstReading(proc);
  SystemSampler sampler(FakeProcOptions(proc));
  (void)sampler.Sample(100);
  WriteSecondReading(proc);
  std::filesystem::remove(proc.path() + "/diskstats");
  proc.Write("meminfo", "garbage\n");
  proc.Write("4242/stat", "truncated (");
  std::map<std::string, double> series = ToMap(sampler.Sample(102));
  EXPECT_THAT(series,
              UnorderedElementsAre(Key("system/cpu_percent"), Key("system/process_rss_bytes"),
                                   Key("system/network_receive_bytes_per_second"),
                                   Key("system/network_send_bytes_per_second")));
}

TEST(SystemSamplerTest, EmptyProcRootGivesNoSeries) {
  TempDir proc;
  SystemSampler sampler(FakeProcOptions(proc));
  EXPECT_THAT(sampler.Sample(1), IsEmpty());
  EXPECT_THAT(sampler.Sample(2), IsEmpty());
}

TEST(SystemSamplerTest, PidZeroReadsSelfAndStatmIsTheRssFallback) {
  TempDir proc;
  proc.Write("self/status", "Name:\tkworker\nState:\tI\n");  // no VmRSS
  proc.Write("self/statm", "1000 250 100 10 0 300 0\n");
  SystemSampler sampler(
      SystemSamplerOptions{.proc_root = proc.path(), .nvml_library = kNoLibrary, .pid = 0});
  std::map<std::string, double> series = ToMap(sampler.Sample(1));
  EXPECT_EQ(series["system/process_rss_bytes"], 250.0 * ::sysconf(_SC_PAGESIZE));
}

TEST(SystemSamplerTest, RealProcGivesPlausibleValues) {
  SystemSampler sampler(SystemSamplerOptions{.nvml_library = kNoLibrary});
  auto now = [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  (void)sampler.Sample(now());
  // Burn some CPU so that the process's share is measurable.
  volatile double sink = 0;
  auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(100)) sink = sink + 1;
  std::map<std::string, double> series = ToMap(sampler.Sample(now()));

  ASSERT_THAT(series, Contains(Key("system/process_rss_bytes")));
  EXPECT_GT(series["system/process_rss_bytes"], 0);
  ASSERT_THAT(series, Contains(Key("system/memory_percent")));
  EXPECT_GT(series["system/memory_percent"], 0);
  EXPECT_LE(series["system/memory_percent"], 100);
  EXPECT_GT(series["system/memory_used_bytes"], 0);
  ASSERT_THAT(series, Contains(Key("system/cpu_percent")));
  EXPECT_GE(series["system/cpu_percent"], 0);
  EXPECT_LE(series["system/cpu_percent"], 100);
  ASSERT_THAT(series, Contains(Key("system/process_cpu_percent")));
  EXPECT_GT(series["system/process_cpu_percent"], 0);
  for (const auto& [name, value] : series) {
    EXPECT_GE(value, 0) << name;
    EXPECT_THAT(name, StartsWith("system/"));
    EXPECT_THAT(name, Not(StartsWith("system/gpu/")));
  }
}

// ---------------------------------------------------------------------------------------------
// NVML, through the fake library.

// Sampler over an empty /proc, so that only GPU series appear.
class NvmlTest : public ::testing::Test {
 protected:
  std::map<std::string, double> SampleGpus(const std::string& library, int* gpu_count = nullptr,
                                           std::string* error = nullptr) {
    SystemSampler sampler(SystemSamplerOptions{.proc_root = proc_.path(), .nvml_library = library});
    if (gpu_count != nullptr) *gpu_count = sampler.gpu_count();
    if (error != nullptr) *error = sampler.gpu_error();
    return ToMap(sampler.Sample(1));
  }

  TempDir proc_;
  ScopedEnv count_{"FAKE_NVML_GPU_COUNT", std::nullopt};
  ScopedEnv fail_{"FAKE_NVML_FAIL", std::nullopt};
};

TEST_F(NvmlTest, ReportsEveryValueOfEveryGpu) {
  int gpus = -1;
  std::string error = "unset";
  std::map<std::string, double> series = SampleGpus(kFakeNvml, &gpus, &error);
  EXPECT_EQ(gpus, 2);
  EXPECT_EQ(error, "");
  std::map<std::string, double> expected = {
      {"system/gpu/0/utilization_percent", 5},
      {"system/gpu/0/memory_used_bytes", 1 * kGiB},
      {"system/gpu/0/memory_percent", 1.25},
      {"system/gpu/0/temperature_c", 40},
      {"system/gpu/0/power_watts", 100},
      {"system/gpu/1/utilization_percent", 15},
      {"system/gpu/1/memory_used_bytes", 2 * kGiB},
      {"system/gpu/1/memory_percent", 2.5},
      {"system/gpu/1/temperature_c", 41},
      {"system/gpu/1/power_watts", 101},
  };
  EXPECT_EQ(series, expected);
}

TEST_F(NvmlTest, OneGpuIsNamedWithoutItsIndex) {
  SystemSampler sampler(
      SystemSamplerOptions{.proc_root = proc_.path(), .nvml_library = kFakeNvml, .gpu_index = 1});
  std::map<std::string, double> expected = {
      {"system/gpu/utilization_percent", 15}, {"system/gpu/memory_used_bytes", 2 * kGiB},
      {"system/gpu/memory_percent", 2.5},     {"system/gpu/temperature_c", 41},
      {"system/gpu/power_watts", 101},
  };
  EXPECT_EQ(ToMap(sampler.Sample(1)), expected);
}

TEST_F(NvmlTest, AGpuIndexBeyondTheDevicesAndGpusOffGiveNoGpuSeries) {
  SystemSampler beyond(
      SystemSamplerOptions{.proc_root = proc_.path(), .nvml_library = kFakeNvml, .gpu_index = 2});
  EXPECT_TRUE(beyond.Sample(1).empty());
  SystemSampler off(
      SystemSamplerOptions{.proc_root = proc_.path(), .nvml_library = kFakeNvml, .gpus = false});
  EXPECT_EQ(off.gpu_count(), 0);
  EXPECT_TRUE(off.Sample(1).empty());
}

TEST_F(NvmlTest, GpuCountComesFromNvml) {
  ScopedEnv count("FAKE_NVML_GPU_COUNT", "8");
  int gpus = -1;
  std::map<std::string, double> series = SampleGpus(kFakeNvml, &gpus);
  EXPECT_EQ(gpus, 8);
  EXPECT_EQ(series.size(), 8u * 5);
  EXPECT_EQ(series["system/gpu/7/power_watts"], 107);
  EXPECT_EQ(series["system/gpu/7/memory_percent"], 10);
}

TEST_F(NvmlTest, AFailingCallSkipsOnlyItsValue) {
  ScopedEnv fail("FAKE_NVML_FAIL", "power");
  int gpus = -1;
  std::map<std::string, double> series = SampleGpus(kFakeNvml, &gpus);
  EXPECT_EQ(gpus, 2);
  EXPECT_EQ(series.size(), 2u * 4);
  EXPECT_THAT(series, Not(Contains(Key("system/gpu/0/power_watts"))));
  EXPECT_THAT(series, Not(Contains(Key("system/gpu/1/power_watts"))));
  EXPECT_EQ(series["system/gpu/1/temperature_c"], 41);

  ScopedEnv fail_more("FAKE_NVML_FAIL", "memory,utilization");
  series = SampleGpus(kFakeNvml);
  EXPECT_EQ(series, (std::map<std::string, double>{{"system/gpu/0/temperature_c", 40},
                                                   {"system/gpu/0/power_watts", 100},
                                                   {"system/gpu/1/temperature_c", 41},
                                                   {"system/gpu/1/power_watts", 101}}));
}

TEST_F(NvmlTest, FailingInitOrCountMeansNoGpus) {
  for (const char* call : {"init", "count"}) {
    ScopedEnv fail("FAKE_NVML_FAIL", call);
    int gpus = -1;
    std::string error;
    EXPECT_THAT(SampleGpus(kFakeNvml, &gpus, &error), IsEmpty()) << call;
    EXPECT_EQ(gpus, 0) << call;
    EXPECT_THAT(error,
                HasSubstr(call == std::string("init") ? "nvmlInit_v2" : "nvmlDeviceGetCount_v2"));
  }
}

TEST_F(NvmlTest, DevicesWithoutHandlesAreCountedButSilent) {
  ScopedEnv fail("FAKE_NVML_FAIL", "handle");
  int gpus = -1;
  EXPECT_THAT(SampleGpus(kFakeNvml, &gpus), IsEmpty());
  EXPECT_EQ(gpus, 2);
}

TEST_F(NvmlTest, ShutsNvmlDownOnDestruction) {
  // Holding our own reference keeps the fake loaded (and its counter alive) across samplers.
  void* fake = ::dlopen(kFakeNvml, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(fake, nullptr) << ::dlerror();
  auto active_inits = reinterpret_cast<int (*)()>(::dlsym(fake, "fake_nvml_active_inits"));
  ASSERT_NE(active_inits, nullptr);
  {
    SystemSampler sampler(
        SystemSamplerOptions{.proc_root = proc_.path(), .nvml_library = kFakeNvml});
    EXPECT_EQ(active_inits(), 1);
  }
  EXPECT_EQ(active_inits(), 0);
  {
    ScopedEnv fail("FAKE_NVML_FAIL", "count");
    SystemSampler sampler(
        SystemSamplerOptions{.proc_root = proc_.path(), .nvml_library = kFakeNvml});
    EXPECT_EQ(active_inits(), 0);
  }
  ::dlclose(fake);
}

TEST_F(NvmlTest, MissingLibraryMeansNoGpus) {
  int gpus = -1;
  std::string error;
  EXPECT_THAT(SampleGpus(kNoLibrary, &gpus, &error), IsEmpty());
  EXPECT_EQ(gpus, 0);
  EXPECT_THAT(error, HasSubstr(kNoLibrary));
}

TEST_F(NvmlTest, LibraryWithoutNvmlSymbolsMeansNoGpus) {
  int gpus = -1;
  std::string error;
  EXPECT_THAT(SampleGpus("libm.so.6", &gpus, &error), IsEmpty());
  EXPECT_EQ(gpus, 0);
  EXPECT_THAT(error, HasSubstr("lacks nvmlInit_v2"));
}

// The machine's own NVML, where there is one: values within their physical ranges.
TEST(RealNvmlTest, PlausibleValuesIfPresent) {
  SystemSampler sampler(SystemSamplerOptions{});
  if (sampler.gpu_count() == 0) GTEST_SKIP() << "no NVML here: " << sampler.gpu_error();
  std::map<std::string, double> series = ToMap(sampler.Sample(1));
  for (int i = 0; i < sampler.gpu_count(); ++i) {
    std::string prefix = "system/gpu/" + std::to_string(i) + "/";
    if (series.count(prefix + "utilization_percent")) {
      EXPECT_GE(series[prefix + "utilization_percent"], 0);
      EXPECT_LE(series[prefix + "utilization_percent"], 100);
    }
    ASSERT_THAT(series, Contains(Key(prefix + "memory_used_bytes")));
    EXPECT_GT(series[prefix + "memory_percent"], 0);
    EXPECT_LE(series[prefix + "memory_percent"], 100);
    if (series.count(prefix + "temperature_c")) {
      EXPECT_GT(series[prefix + "temperature_c"], 0);
    }
  }
}

}  // namespace
}  // namespace trainwatch::sdk
