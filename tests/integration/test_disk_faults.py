"""A real full disk under a real server: the data directory is a small tmpfs that the test fills.

No fault switch in the binary: the disk really is full (ENOSPC from the kernel). Mounting a tmpfs
needs CAP_SYS_ADMIN (root in the CI container); without it the test is skipped and says why.

While the disk is full a write is refused with 507 and /healthz answers 503 "degraded" with the
reason; once space returns the write-ahead log starts a fresh segment by itself (within about a
second), writing resumes without a restart, and every acknowledged point is there, also after a
restart. A full disk under the notification outbox alone refuses the alert's notification and shows
in /healthz until a notification is queued again.
"""
import errno
import json
import os
import subprocess
import time

import pytest

from harness import wait_until

TMPFS_BYTES = 32 << 20


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%d" % TMPFS_BYTES, "tmpfs", str(mount)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs for a real full disk (needs CAP_SYS_ADMIN): " + r.stderr.strip())
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(path):
    """Writes a file until the disk refuses (ENOSPC); returns its path."""
    filler = os.path.join(path, "filler")
    chunk = b"\0" * (64 << 10)
    with open(filler, "wb", buffering=0) as f:
        while True:
            try:
                f.write(chunk)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
                chunk = chunk[: len(chunk) // 2]
                if not chunk:
                    break
    return filler


def lines(run, steps):
    t0 = time.time() - 3600
    return [{"project": "p", "run": run, "step": s, "time": t0 + s, "metrics": {"loss": 1.0 / (s + 1)}}
            for s in steps]


def steps_of(server, run):
    return [rec["step"] for rec in server.export(run, project="p") if "metrics" in rec and "loss" in rec["metrics"]]


def test_a_full_disk_refuses_writes_with_507_and_writing_resumes_by_itself(small_disk, server_factory):
    # The disk guard would refuse writes before the disk is full (that is its job, tested in
    # test_retention.py); here the disk fills under the write-ahead log itself.
    server = server_factory("--disk-guard-percent", "100", data_dir=str(small_disk / "data"))
    server.write_ok(lines("r", range(0, 10)))

    filler = fill(str(small_disk))
    # The log's last page may still have room for a few records: write until the disk refuses.
    acked = list(range(10))
    refused = None
    for batch in range(1, 1000):
        steps = range(10 * batch, 10 * batch + 10)
        r = server.write(lines("r", steps))
        if r.status != 200:
            refused = (r, steps)
            break
        acked.extend(steps)
    assert refused is not None, "the full disk never refused a write"
    response, steps = refused
    assert response.status == 507, response
    assert "disk full" in response.text, response
    health = server.get("/healthz")
    assert health.status == 503, health
    assert health.json()["status"] == "degraded"
    assert "write-ahead log" in health.json()["reason"]

    os.remove(filler)  # space comes back: no restart
    wait_until(lambda: server.get("/healthz").status == 200, "the log to resume after space returned")
    server.write_ok(lines("r", steps))  # the refused batch, resent
    acked.extend(steps)
    assert steps_of(server, "r") == acked
    server.restart()
    assert steps_of(server, "r") == acked


def nan_line(run, step):
    return '{"project": "p", "run": %s, "step": %d, "time": %r, "metrics": {"loss": NaN}}' % (
        json.dumps(run), step, time.time() - 3600 + step)


def test_a_full_disk_under_the_outbox_shows_in_healthz_until_a_notification_is_queued_again(
        small_disk, server_factory, tmp_path, refusing_url):
    # Only the notification outbox (DATA_DIR/notify) is on the small disk: the log and the store
    # keep writing, so /healthz can only be degraded by the refused notification.
    data = tmp_path / "data"
    data.mkdir()
    os.symlink(str(small_disk), str(data / "notify"))
    alerting = tmp_path / "alerting.yml"
    alerting.write_text("receivers:\n  - name: hook\n    webhook: {url: \"%s/hook\"}\n"
                        "routes:\n  - {receiver: hook}\n" % refusing_url)
    server = server_factory("--alerting", str(alerting), data_dir=str(data))
    assert server.get("/healthz").status == 200

    filler = fill(str(small_disk))
    # A NaN loss fires an alert whose notification is queued. The outbox's last page may still have
    # room for a few: alerts on more runs until one is refused.
    for i in range(200):
        server.write_ok([nan_line("nan-%d" % i, 0)])
        if server.get("/healthz").status == 503:
            break
    wait_until(lambda: server.get("/healthz").status == 503, "the refused notification in /healthz")
    health = server.get("/healthz").json()
    assert health["status"] == "degraded", health
    assert health["reason"].startswith("notification outbox: ResourceExhausted"), health
    assert "enqueueing alert" in health["reason"], health
    server.write_ok(lines("r1", range(1, 5)))  # the log takes writes all along

    # Space comes back: with no new alert, the refused notification is queued at the alert
    # thread's next stall check, and /healthz is ok again.
    os.remove(filler)
    wait_until(lambda: server.get("/healthz").status == 200, "/healthz ok once the refused notification was queued")
    wait_until(lambda: "alert notification queued after a refusal" in server.stderr_text(),
               "the server's log line for the notification queued after its refusal")
