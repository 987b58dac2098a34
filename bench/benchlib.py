"""Shared helpers for the benchmark drivers: workloads, a trainwatch server process, the C++ clients,
/proc figures and directory sizes. Standard library only; run with /usr/bin/python3."""

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The workload generator lives in shared/, inside the checkout or beside it.
GEN_WORKLOAD = next((p for p in (os.path.join(REPO, "shared", "bench", "gen_workload.py"),
                                 os.path.join(os.path.dirname(REPO), "shared", "bench", "gen_workload.py"))
                     if os.path.exists(p)), "shared/bench/gen_workload.py")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def add_common_args(parser):
    """Flags every driver takes: where the binaries are, the preset, where workloads live."""
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build"),
                        help="CMake build directory holding bin/ (default: repo build/)")
    parser.add_argument("--preset", default="10m", choices=["10m", "1m"],
                        help="workload size (1m for a quick smoke run)")
    parser.add_argument("--work-dir", default=os.environ.get("TRAINWATCH_BENCH_DIR", "/tmp/trainwatch-bench"),
                        help="cache for generated workloads and scratch data directories")


def binary(args, name):
    path = os.path.join(os.path.abspath(args.build_dir), "bin", name)
    if not os.access(path, os.X_OK):
        sys.exit(f"{name} not found at {path}: build it first (cmake --build {args.build_dir})")
    return path


def ensure_workload(args, lp=False):
    """The directory of the preset's workload, generated on first use (~30 s for 10m)."""
    out = os.path.join(args.work_dir, "workload-" + args.preset)
    meta = os.path.join(out, "workload.meta.json")
    have_lp = os.path.isdir(os.path.join(out, "influx_lp"))
    if not os.path.exists(meta) or (lp and not have_lp):
        generator = os.environ.get("TRAINWATCH_GEN_WORKLOAD", GEN_WORKLOAD)
        cmd = ["/usr/bin/python3", generator, "--preset", args.preset, "--out", out]
        if not lp:
            cmd.append("--no-lp")
        print(f"# generating workload: {' '.join(cmd)}", file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return out


def workload_meta(workload_dir):
    with open(os.path.join(workload_dir, "workload.meta.json")) as f:
        return json.load(f)


def cpu_seconds(pid):
    """utime + stime of every thread of `pid`, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # fields 14 and 15 of the full line


def run_queue_wait_seconds(pid):
    """Seconds the threads of `pid` have spent runnable but waiting for a CPU (sum over threads,
    /proc/PID/task/*/schedstat field 2): how much a busy machine delayed the server."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[1])
        except (FileNotFoundError, ProcessLookupError):
            pass  # the thread ended
    return total / 1e9


def machine_busy_seconds():
    """Busy CPU seconds of the whole machine so far (/proc/stat, all but idle and iowait)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / CLK_TCK


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def dir_bytes(path, predicate=None):
    """(apparent bytes, allocated bytes, files) of every file under `path` that `predicate` accepts."""
    apparent = allocated = files = 0
    for root, _, names in os.walk(path):
        for name in names:
            if predicate and not predicate(name):
                continue
            st = os.lstat(os.path.join(root, name))
            apparent += st.st_size
            allocated += st.st_blocks * 512
            files += 1
    return apparent, allocated, files


def mb(n):
    return f"{n / 1e6:.2f} MB"


class Server:
    """A `trainwatch serve` process on free loopback ports with its own data directory."""

    def __init__(self, args, data_dir, extra=()):
        self.binary = binary(args, "trainwatch")
        self.data_dir = data_dir
        self.extra = list(extra)
        self.proc = None
        self.http = self.grpc = None

    def start(self, timeout=300):
        os.makedirs(self.data_dir, exist_ok=True)
        self.log = open(self.data_dir.rstrip("/") + ".log", "ab")  # the server's stderr, beside its data
        cmd = [self.binary, "serve", "--data-dir", self.data_dir, "--listen", "127.0.0.1:0",
               "--grpc-listen", "127.0.0.1:0", "--log-level", "warn"] + self.extra
        t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log)
        while True:
            line = self.proc.stdout.readline().decode()
            if not line:
                raise RuntimeError(f"trainwatch exited ({self.proc.wait()}) before serving; see {self.log.name}")
            m = re.search(r"is serving https?://([\d.]+):(\d+) \(gRPC(?: over TLS)? ([\d.]+):(\d+)", line)
            if m:
                self.http = f"{m.group(1)}:{m.group(2)}"
                self.grpc = f"{m.group(3)}:{m.group(4)}"
                self.start_seconds = time.monotonic() - t0
                return self
            if time.monotonic() - t0 > timeout:
                raise RuntimeError("trainwatch did not start in time")

    @property
    def pid(self):
        return self.proc.pid

    def cpu(self):
        return cpu_seconds(self.pid)

    def rss(self):
        return rss_bytes(self.pid)

    def stop(self):
        """SIGTERM (drain and checkpoint); returns (seconds to exit, CPU seconds of the shutdown)."""
        cpu0 = self.cpu()
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        # The process's CPU after exit: its children's rusage, read via wait4.
        _, status, usage = os.wait4(self.pid, 0)
        seconds = time.monotonic() - t0
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.proc.stdout.close()
        self.log.close()
        if self.proc.returncode != 0:
            print(f"# warning: trainwatch exited with {self.proc.returncode}; see {self.log.name}")
        return seconds, usage.ru_utime + usage.ru_stime - cpu0

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.stop()


def wait_idle(server, quiet_cpu=0.05, interval=0.5, limit=300):
    """Waits until the server's CPU use falls under `quiet_cpu` seconds per `interval` (background
    sealing done); returns the seconds waited."""
    t0 = time.monotonic()
    last = server.cpu()
    while time.monotonic() - t0 < limit:
        time.sleep(interval)
        now = server.cpu()
        if now - last < quiet_cpu:
            break
        last = now
    return time.monotonic() - t0


def scratch_dir(args, name):
    """A fresh, empty directory under the work dir (removed first if it exists)."""
    path = os.path.join(args.work_dir, "scratch", name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def run_client(cmd, echo=True):
    """Runs a C++ benchmark client with --json-out; echoes its report; returns the JSON it wrote."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        out_path = tmp.name
    try:
        result = subprocess.run(cmd + ["--json-out", out_path], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        if echo and result.stdout:
            print(result.stdout, end="", flush=True)
        if result.returncode != 0:
            raise RuntimeError(f"{os.path.basename(cmd[0])} failed ({result.returncode}): {result.stderr.strip()}")
        with open(out_path) as f:
            return json.load(f)
    finally:
        os.unlink(out_path)


def store_sizes(data_dir):
    """Apparent and allocated bytes of the store (RocksDB) and WAL directories, SSTs apart."""
    store = os.path.join(data_dir, "store")
    return {
        "store": dir_bytes(store),
        "store_sst": dir_bytes(store, lambda n: n.endswith(".sst")),
        "store_rocks_log": dir_bytes(store, lambda n: n.endswith(".log")),
        "wal": dir_bytes(os.path.join(data_dir, "wal")),
    }


if __name__ == "__main__":
    # `benchlib.py --preset 1m`: generates the preset's workload (with line protocol) if missing.
    import argparse
    parser = argparse.ArgumentParser(description="Generates a preset's workload into the work dir.")
    add_common_args(parser)
    print(ensure_workload(parser.parse_args(), lp=True))


# --- latency reports and background load (live_latency_bench.py, alert_latency_bench.py)


def nearest_rank(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))]


def percentiles(values):
    if not values:
        return "no samples"
    v = sorted(values)
    return (f"p50 {nearest_rank(v, 0.5):.2f}  p90 {nearest_rank(v, 0.9):.2f}  p99 {nearest_rank(v, 0.99):.2f}  "
            f"max {v[-1]:.2f} ms (n={len(v)})")


class BackgroundLoad:
    """bin/ingest_bench writing synthetic runs over gRPC for `seconds`, paced to `rate` points/s
    (0: as fast as the server acknowledges)."""

    def __init__(self, args, server, name, rate):
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            self.out_path = f.name
        cmd = [binary(args, "ingest_bench"), "--transport", "grpc", "--target", server.grpc,
               "--server-pid", str(server.pid), "--shape", "8x50x25000", "--project", "load",
               "--run-prefix", f"{name}-", "--max-seconds", str(args.seconds + 1), "--loop",
               "--json-out", self.out_path]
        if rate > 0:
            cmd += ["--rate", str(rate)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # ingest_bench builds its requests first (a second or two): wait until the server works.
        cpu0 = server.cpu()
        while self.proc.poll() is None and server.cpu() - cpu0 < 0.05:
            time.sleep(0.1)

    def finish(self):
        """Waits for the load to end; returns ingest_bench's figures."""
        _, err = self.proc.communicate()
        try:
            if self.proc.returncode != 0:
                raise RuntimeError(f"background load failed: {err.strip()}")
            with open(self.out_path) as f:
                return json.load(f)
        finally:
            os.unlink(self.out_path)
