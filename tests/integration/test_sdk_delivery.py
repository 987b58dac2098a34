"""The SDK's delivery promise against real processes: a training process (the Python SDK, in a
child process) logging through server outages, a kill -9, and a frozen (SIGSTOPped) server.

Needs the Python package of the build, <build>/python beside <build>/bin/trainwatch (or
TRAINWATCH_PYTHONPATH); without it the tests fail, saying so.
"""
import json
import os
import signal
import subprocess

from conftest import REPO
from harness import wait_until

PYTHON = os.environ.get("TRAINWATCH_PYTHON", "/usr/bin/python3")
BUILD_PYTHON = os.environ.get("TRAINWATCH_PYTHONPATH", os.path.join(os.path.dirname(os.path.dirname(
    os.environ.get("TRAINWATCH_BIN", os.path.join(REPO, "build", "bin", "trainwatch")))), "python"))

# The training process: logs `steps` steps of four metrics at `rate` steps/s, sampling its RSS and
# the client's counters every half second; prints one JSON report. (The latency of each log()
# call while the server is frozen is measured by bench/sdk_frozen_server_bench.py.) Its
# progress is the tests' clock: every 50 steps it appends "<steps done> <seconds since start>" to
# the progress file, the event a test waits on to act after K steps of training.
CHILD = r'''
import json, os, sys, time, warnings
import trainwatch as tw

args = json.loads(sys.argv[1])
caught = []
warnings.showwarning = lambda message, *a, **k: caught.append(str(message))

def rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0

run = tw.init(project="sdk", id=args["run"], server=args["server"], system_metrics=False,
              **args.get("options", {}))
samples = []
progress = open(args["progress"], "a", buffering=1)
start = time.monotonic()
next_sample = start
for step in range(args["steps"]):
    due = start + step / args["rate"]
    while time.monotonic() < due:
        pass
    run.log({"loss": 1.0 / (step + 1), "acc": step * 1e-6, "lr": 0.5 ** (step % 7), "tick": float(step)},
            step=step)
    if time.monotonic() >= next_sample:
        next_sample += 0.5
        s = run.stats()
        samples.append({"t": time.monotonic() - start, "rss": rss_bytes(), "spool": s["spool_bytes"],
                        "memory": s["memory_bytes"], "connected": s["connected"]})
    if (step + 1) % 50 == 0:
        progress.write("%d %.6f\n" % (step + 1, time.monotonic() - start))
progress.close()
run.finish()
print(json.dumps({"samples": samples, "stats": run.stats(), "warnings": caught}))
'''


def start_child(tmp_path, server, run, steps, rate, options=None):
    env = dict(os.environ, PYTHONPATH=BUILD_PYTHON, TRAINWATCH_SPOOL_DIR=str(tmp_path / "spool"))
    probe = subprocess.run([PYTHON, "-c", "import trainwatch"], env=env, capture_output=True)
    assert probe.returncode == 0, "the Python SDK is not built in %s: %s" % (BUILD_PYTHON, probe.stderr.decode())
    progress = str(tmp_path / ("%s.progress" % run))
    args = {"server": server.url, "run": run, "steps": steps, "rate": rate, "options": options or {},
            "progress": progress}
    child = subprocess.Popen([PYTHON, "-c", CHILD, json.dumps(args)], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    child.progress = progress
    return child


def child_progress(child):
    """(steps done, child's seconds since its first step) as last reported; (0, 0.0) before any."""
    try:
        with open(child.progress) as f:
            lines = [line for line in f.read().split("\n")[:-1] if line]  # whole lines only
    except FileNotFoundError:
        return 0, 0.0
    if not lines:
        return 0, 0.0
    step, t = lines[-1].split()
    return int(step), float(t)


def wait_for_steps(child, steps):
    """Waits until the child has trained `steps` steps; returns its report (steps done, its time)."""
    def reached():
        if child.poll() is not None:
            raise AssertionError("the child exited (%s) before step %d: %s"
                                 % (child.returncode, steps, child.stderr.read().decode()))
        done, t = child_progress(child)
        return (done, t) if done >= steps else None
    return wait_until(reached, "the child to train %d steps" % steps, timeout=120)


def finish_child(child, timeout):
    out, err = child.communicate(timeout=timeout)
    assert child.returncode == 0, err.decode()
    return json.loads(out.decode().strip().splitlines()[-1]), err.decode()


def assert_every_step_once(server, run, steps):
    listing = server.get_json("/api/v1/metrics", {"project": "sdk", "run": run})
    metrics = {m["name"]: m for m in (listing["metrics"] if isinstance(listing, dict) else listing)}
    for name in ("loss", "acc", "lr", "tick"):
        assert metrics[name]["count"] == steps, (name, metrics[name])
        assert metrics[name]["timelines"] == 1, "a point was applied twice: %r" % metrics[name]
    series = server.get_json("/api/v1/series", {"project": "sdk", "run": run, "metric": "tick"})
    points = series["points"] if "points" in series else series["series"][0]["points"]
    steps_seen = [p[0] if isinstance(p, list) else p["step"] for p in points]
    values = [p[2] if isinstance(p, list) else p["value"] for p in points]
    assert steps_seen == list(range(steps))
    assert values == [float(s) for s in range(steps)]


def test_down_at_start_then_up_then_killed_and_restarted_every_point_arrives_once(server_factory, tmp_path):
    server = server_factory(start=False).hold_ports()  # its address, refusing connections until it starts
    steps, rate = 6000, 250  # 24 s of training
    child = start_child(tmp_path, server, "outages", steps, rate)
    # The child trains at 250 steps/s; the outages it rides out are counted in its steps.
    wait_for_steps(child, 2500)  # the server is down for the first 2500 steps (10 s) of training
    server.start()
    wait_for_steps(child, 4000)  # 1500 steps (6 s) of delivery before the crash
    server.kill9()  # killed mid-run ...
    wait_for_steps(child, 4500)  # down for 500 steps (2 s) of training
    server.start()  # ... and restarted on the same data
    report, _ = finish_child(child, timeout=120)
    assert report["stats"]["points_dropped"] == 0
    assert report["stats"]["points_acked"] == steps * 4
    assert report["stats"]["reconnects"] >= 2
    unreachable = [w for w in report["warnings"] if "cannot reach" in w]
    assert len(unreachable) >= 1
    assert report["warnings"][0].count("cannot reach") == 1, report["warnings"]
    assert_every_step_once(server, "outages", steps)
    run = server.get_json("/api/v1/run", {"project": "sdk", "run": "outages"})
    assert (run.get("run") or run)["status"] == "finished"


def test_frozen_server_training_goes_on_and_memory_stays_bounded(server_factory, tmp_path):
    server = server_factory()
    steps, rate = 60000, 5000  # 12 s, 20,000 points/s
    options = {"memory_max_bytes": 2 << 20, "ack_timeout_seconds": 2.0}
    child = start_child(tmp_path, server, "frozen", steps, rate, options)
    # The windows are in the child's time (seconds since its first step), from its progress reports.
    _, baseline_end = wait_for_steps(child, 15000)  # 15,000 steps (3 s) at full speed: the baseline
    server.proc.send_signal(signal.SIGSTOP)
    # Reported after SIGSTOP was sent: the child's time at or after the freeze.
    stopped_step, frozen_from = wait_for_steps(child, child_progress(child)[0] + 1)
    # log() does not wait for the frozen server: the child trains on, 30,000 steps (6 s of its
    # time) while the server cannot answer. How long each call takes then, beside before the
    # freeze, is a figure, not a bound: bench/sdk_frozen_server_bench.py prints it.
    _, frozen_until = wait_for_steps(child, stopped_step + 30000)
    server.proc.send_signal(signal.SIGCONT)  # after frozen_until, in the child's time
    report, _ = finish_child(child, timeout=120)

    frozen_samples = [s for s in report["samples"] if frozen_from + 0.5 <= s["t"] < frozen_until]
    assert frozen_samples, report["samples"]
    baseline = [s["rss"] for s in report["samples"] if s["t"] < baseline_end]
    growth = max(s["rss"] for s in frozen_samples) - max(baseline)
    # 120,000 points logged while frozen; memory for batches is capped at 2 MiB, the rest spools.
    assert growth < 32 << 20, growth
    assert max(s["memory"] for s in frozen_samples) <= 2 << 20
    assert max(s["spool"] for s in frozen_samples) > 0, "nothing was spooled while the server was frozen"
    assert report["stats"]["points_dropped"] == 0
    assert_every_step_once(server, "frozen", steps)


def test_offline_run_is_uploaded_by_trainwatch_sync(server, tmp_path):
    steps = 2000
    child = start_child(tmp_path, server, "offline", steps, 5000, {"mode": "offline"})
    report, _ = finish_child(child, timeout=120)
    assert report["stats"]["points_acked"] == 0
    assert report["stats"]["points_spooled"] == steps * 4
    listing = server.get_json("/api/v1/runs", {"project": "sdk"})
    assert listing["total"] == 0, "an offline run sent something"

    spool_root = str(tmp_path / "spool")
    sync = subprocess.run([server.command()[0], "sync", spool_root, "--server", server.url],
                          capture_output=True, text=True, timeout=120)
    assert sync.returncode == 0, sync.stderr
    assert "1 of 1 spool directories delivered (%d points)" % (steps * 4) in sync.stdout, sync.stdout
    assert_every_step_once(server, "offline", steps)
    assert os.listdir(spool_root) == [], "a delivered spool directory is removed"

    again = subprocess.run([server.command()[0], "sync", spool_root, "--server", server.url],
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "0 of 0" in again.stdout, (again.stdout, again.stderr)
