// Process figures read from /proc, for benchmarks that report server cost per CPU-second.
#pragma once

#include <cstdint>
#include <optional>

namespace trainwatch::bench {

// User plus system CPU seconds of every thread of process `pid` so far (/proc/PID/stat fields 14
// and 15); nullopt if the process is gone or the file is unreadable.
std::optional<double> ProcessCpuSeconds(int pid);

// Resident set size of process `pid` in bytes (VmRSS in /proc/PID/status); nullopt if unreadable.
std::optional<uint64_t> ProcessRssBytes(int pid);

// CPU seconds (user plus system) this process has used so far.
double SelfCpuSeconds();

// Busy CPU seconds of the whole machine so far, summed over its CPUs (/proc/stat: everything but
// idle and iowait). With the server's and the client's own CPU it tells how much a noisy
// neighbour took during a run. 0 if unreadable.
double MachineBusySeconds();

}  // namespace trainwatch::bench
