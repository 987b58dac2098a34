// Parsers for the Linux /proc files the system sampler reads, and one call that reads them all.
//
// Every parser takes the file's text and returns nullopt when the text does not have the expected
// shape; none throws. Counters are returned raw (cumulative since boot); turning them into rates is
// the sampler's job.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace trainwatch::sdk {

// The machine-wide "cpu" line of /proc/stat, in clock ticks summed over all cores.
struct MachineCpuTimes {
  uint64_t busy_ticks = 0;   // total_ticks minus idle and iowait
  uint64_t total_ticks = 0;  // user + nice + system + idle + iowait + irq + softirq + steal
};

// /proc/meminfo, in bytes.
struct MemoryInfo {
  uint64_t total_bytes = 0;
  // MemAvailable; on kernels without it (< 3.14), MemFree + Buffers + Cached.
  uint64_t available_bytes = 0;
};

// Cumulative bytes moved by one device: for a disk read and written, for a network interface
// received (read) and sent (write).
struct IoBytes {
  uint64_t read = 0;
  uint64_t write = 0;
};

// Device name -> counters.
using IoBytesByDevice = std::map<std::string, IoBytes>;

// The first line of /proc/stat ("cpu  user nice system idle iowait irq softirq steal ...").
// Guest time is already part of user and nice, so it is not added again.
std::optional<MachineCpuTimes> ParseProcStat(std::string_view text);

// utime + stime (fields 14 and 15, clock ticks) of /proc/<pid>/stat. The command name (field 2)
// may hold spaces and parentheses; fields are counted after its last ')'.
std::optional<uint64_t> ParseProcessCpuTicks(std::string_view text);

// MemTotal and MemAvailable (see MemoryInfo) of /proc/meminfo; nullopt if MemTotal is missing or 0.
std::optional<MemoryInfo> ParseMeminfo(std::string_view text);

// VmRSS of /proc/<pid>/status, in bytes; nullopt if absent (kernel threads have none).
std::optional<uint64_t> ParseStatusRssBytes(std::string_view text);

// The resident field (second) of /proc/<pid>/statm times `page_size_bytes`.
std::optional<uint64_t> ParseStatmRssBytes(std::string_view text, uint64_t page_size_bytes);

// Sectors read and written (fields 6 and 10, 512-byte units whatever the device's sector size) of
// the whole physical disks in /proc/diskstats. Skipped: partitions (a name that is another listed
// device's name followed by digits, or by "p" and digits when that name ends in a digit, the
// kernel's naming rule), loop, ram and zram devices, and stacked devices (dm-*, md*) whose I/O is
// already counted on the disks beneath them. Lines with fewer than 10 fields are skipped.
std::optional<IoBytesByDevice> ParseDiskstats(std::string_view text);

// Received and sent bytes (first and ninth counters) of every interface in /proc/net/dev except
// the loopback "lo". nullopt if the text has no interface line at all.
std::optional<IoBytesByDevice> ParseNetDev(std::string_view text);

// One reading of every /proc source; a source that could not be read or parsed is nullopt.
struct ProcSnapshot {
  std::optional<MachineCpuTimes> machine_cpu;  // <root>/stat
  std::optional<uint64_t> process_cpu_ticks;   // <root>/<pid>/stat
  std::optional<MemoryInfo> memory;            // <root>/meminfo
  std::optional<uint64_t> process_rss_bytes;   // <root>/<pid>/status, else <root>/<pid>/statm
  std::optional<IoBytesByDevice> disks;        // <root>/diskstats
  std::optional<IoBytesByDevice> network;      // <root>/net/dev
};

// Reads every source under `proc_root` for process `pid` (0: "self"). Never fails: what cannot be
// read is left empty. `page_size_bytes` converts statm pages.
ProcSnapshot ReadProcSnapshot(const std::string& proc_root, int pid, uint64_t page_size_bytes);

// The whole content of a (possibly size-0, like /proc) file; nullopt if it cannot be opened or
// read, or exceeds `max_bytes`.
std::optional<std::string> ReadSmallFile(const std::string& path, size_t max_bytes = 1 << 20);

}  // namespace trainwatch::sdk
