#include "system/proc_stats.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <vector>

namespace trainwatch::sdk {
namespace {

constexpr uint64_t kBytesPerKib = 1024;
constexpr uint64_t kBytesPerDiskSector = 512;  // /proc/diskstats always counts 512-byte sectors

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::vector<std::string_view> SplitFields(std::string_view text) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsSpace(text[i])) ++i;
    size_t start = i;
    while (i < text.size() && !IsSpace(text[i])) ++i;
    if (i > start) fields.push_back(text.substr(start, i - start));
  }
  return fields;
}

std::optional<uint64_t> ParseU64(std::string_view text) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Calls fn(line) for every line of `text`, without its newline.
template <typename Fn>
void ForEachLine(std::string_view text, Fn fn) {
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    fn(line);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
}

// The value of "Key:   123 kB" lines, in bytes; nullopt if `key` has no such line.
std::optional<uint64_t> FindKibField(std::string_view text, std::string_view key) {
  std::optional<uint64_t> found;
  ForEachLine(text, [&](std::string_view line) {
    if (found || line.size() <= key.size() || line.substr(0, key.size()) != key ||
        line[key.size()] != ':') {
      return;
    }
    std::vector<std::string_view> fields = SplitFields(line.substr(key.size() + 1));
    if (fields.empty()) return;
    std::optional<uint64_t> value = ParseU64(fields[0]);
    if (!value) return;
    bool in_kib = fields.size() >= 2 && fields[1] == "kB";
    found = in_kib ? *value * kBytesPerKib : *value;
  });
  return found;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// True if `name` names a partition of the listed device `disk`, by the kernel's rule: partitions
// are "<disk><n>", or "<disk>p<n>" when the disk's name ends in a digit.
bool IsPartitionOf(std::string_view name, std::string_view disk) {
  if (disk.empty() || name.size() <= disk.size() || name.substr(0, disk.size()) != disk) {
    return false;
  }
  std::string_view suffix = name.substr(disk.size());
  bool disk_ends_in_digit = disk.back() >= '0' && disk.back() <= '9';
  if (!disk_ends_in_digit) return AllDigits(suffix);
  return suffix[0] == 'p' && AllDigits(suffix.substr(1));
}

// Virtual devices: memory-backed (loop, ram, zram) or stacked on other listed disks (dm, md).
bool IsVirtualDisk(std::string_view name) {
  for (std::string_view prefix : {"loop", "ram", "zram", "dm-", "md"}) {
    if (name.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

std::string ProcessDir(const std::string& proc_root, int pid) {
  return proc_root + "/" + (pid == 0 ? std::string("self") : std::to_string(pid));
}

}  // namespace

std::optional<MachineCpuTimes> ParseProcStat(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  std::vector<std::string_view> fields = SplitFields(line);
  // "cpu" and at least user, nice, system, idle.
  if (fields.size() < 5 || fields[0] != "cpu") return std::nullopt;
  constexpr size_t kIdle = 4, kIowait = 5, kLastCounted = 8;  // 1-based after "cpu": steal is 8
  MachineCpuTimes times;
  uint64_t idle = 0;
  for (size_t i = 1; i < fields.size() && i <= kLastCounted; ++i) {
    std::optional<uint64_t> ticks = ParseU64(fields[i]);
    if (!ticks) return std::nullopt;
    times.total_ticks += *ticks;
    if (i == kIdle || i == kIowait) idle += *ticks;
  }
  times.busy_ticks = times.total_ticks - idle;
  return times;
}

std::optional<uint64_t> ParseProcessCpuTicks(std::string_view text) {
  size_t paren = text.rfind(')');
  if (paren == std::string_view::npos) return std::nullopt;
  std::vector<std::string_view> fields = SplitFields(text.substr(paren + 1));
  // fields[0] is field 3 (state), so field n is fields[n - 3].
  constexpr size_t kUtime = 14 - 3, kStime = 15 - 3;
  if (fields.size() <= kStime) return std::nullopt;
  std::optional<uint64_t> utime = ParseU64(fields[kUtime]);
  std::optional<uint64_t> stime = ParseU64(fields[kStime]);
  if (!utime || !stime) return std::nullopt;
  return *utime + *stime;
}

std::optional<MemoryInfo> ParseMeminfo(std::string_view text) {
  std::optional<uint64_t> total = FindKibField(text, "MemTotal");
  if (!total || *total == 0) return std::nullopt;
  std::optional<uint64_t> available = FindKibField(text, "MemAvailable");
  if (!available) {
    std::optional<uint64_t> free = FindKibField(text, "MemFree");
    if (!free) return std::nullopt;
    available = *free + FindKibField(text, "Buffers").value_or(0) +
                FindKibField(text, "Cached").value_or(0);
  }
  return MemoryInfo{.total_bytes = *total, .available_bytes = std::min(*available, *total)};
}

std::optional<uint64_t> ParseStatusRssBytes(std::string_view text) {
  return FindKibField(text, "VmRSS");
}

std::optional<uint64_t> ParseStatmRssBytes(std::string_view text, uint64_t page_size_bytes) {
  std::vector<std::string_view> fields = SplitFields(text);
  if (fields.size() < 2) return std::nullopt;
  std::optional<uint64_t> pages = ParseU64(fields[1]);
  if (!pages) return std::nullopt;
  return *pages * page_size_bytes;
}

std::optional<IoBytesByDevice> ParseDiskstats(std::string_view text) {
  // Field n (1-based) is fields[n - 1]: 3 name, 6 sectors read, 10 sectors written.
  constexpr size_t kName = 2, kSectorsRead = 5, kSectorsWritten = 9;
  IoBytesByDevice all;
  bool any_line = false;
  ForEachLine(text, [&](std::string_view line) {
    std::vector<std::string_view> fields = SplitFields(line);
    if (fields.size() <= kSectorsWritten) return;
    std::optional<uint64_t> read = ParseU64(fields[kSectorsRead]);
    std::optional<uint64_t> written = ParseU64(fields[kSectorsWritten]);
    if (!read || !written) return;
    any_line = true;
    all[std::string(fields[kName])] =
        IoBytes{.read = *read * kBytesPerDiskSector, .write = *written * kBytesPerDiskSector};
  });
  if (!any_line) return std::nullopt;

  IoBytesByDevice disks;
  for (const auto& [name, bytes] : all) {
    if (IsVirtualDisk(name)) continue;
    bool partition = false;
    for (const auto& [other, unused] : all) {
      if (IsPartitionOf(name, other)) {
        partition = true;
        break;
      }
    }
    if (!partition) disks.emplace(name, bytes);
  }
  return disks;
}

std::optional<IoBytesByDevice> ParseNetDev(std::string_view text) {
  // After "name:", the 8 receive counters (bytes first), then the 8 transmit counters.
  constexpr size_t kReceiveBytes = 0, kSendBytes = 8;
  IoBytesByDevice interfaces;
  bool any_line = false;
  ForEachLine(text, [&](std::string_view line) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    std::vector<std::string_view> name = SplitFields(line.substr(0, colon));
    // Old kernels glue big counters to the colon ("eth0:123"); splitting at it handles both.
    std::vector<std::string_view> fields = SplitFields(line.substr(colon + 1));
    if (name.size() != 1 || fields.size() <= kSendBytes) return;
    std::optional<uint64_t> received = ParseU64(fields[kReceiveBytes]);
    std::optional<uint64_t> sent = ParseU64(fields[kSendBytes]);
    if (!received || !sent) return;
    any_line = true;
    if (name[0] == "lo") return;
    interfaces[std::string(name[0])] = IoBytes{.read = *received, .write = *sent};
  });
  if (!any_line) return std::nullopt;
  return interfaces;
}

ProcSnapshot ReadProcSnapshot(const std::string& proc_root, int pid, uint64_t page_size_bytes) {
  ProcSnapshot snapshot;
  std::string process_dir = ProcessDir(proc_root, pid);
  if (auto text = ReadSmallFile(proc_root + "/stat")) snapshot.machine_cpu = ParseProcStat(*text);
  if (auto text = ReadSmallFile(process_dir + "/stat")) {
    snapshot.process_cpu_ticks = ParseProcessCpuTicks(*text);
  }
  if (auto text = ReadSmallFile(proc_root + "/meminfo")) snapshot.memory = ParseMeminfo(*text);
  if (auto text = ReadSmallFile(process_dir + "/status")) {
    snapshot.process_rss_bytes = ParseStatusRssBytes(*text);
  }
  if (!snapshot.process_rss_bytes) {
    if (auto text = ReadSmallFile(process_dir + "/statm")) {
      snapshot.process_rss_bytes = ParseStatmRssBytes(*text, page_size_bytes);
    }
  }
  if (auto text = ReadSmallFile(proc_root + "/diskstats")) snapshot.disks = ParseDiskstats(*text);
  if (auto text = ReadSmallFile(proc_root + "/net/dev")) snapshot.network = ParseNetDev(*text);
  return snapshot;
}

std::optional<std::string> ReadSmallFile(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string content;
  char buffer[8192];
  bool ok = true;
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || content.size() + static_cast<size_t>(n) > max_bytes) {
      ok = false;
      break;
    }
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  if (!ok) return std::nullopt;
  return content;
}

}  // namespace trainwatch::sdk
