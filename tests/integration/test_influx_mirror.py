"""Mirroring out (--mirror-influx, docs/influx.md "Mirroring to InfluxDB") against a real Debian
InfluxDB 1.6 started here: points written to trainwatch appear in InfluxDB as training_metrics
(metric_name, project, run; value, step), the layout Grafana's "Training overview" reads. With
influxd stopped, writes are still acknowledged; the backlog waits in the durable outbox, survives a
restart of trainwatch, and arrives once influxd is back: every point exactly once (counts)."""
import os
import re
import subprocess
import threading

import pytest
from influxdb import InfluxDBClient

from harness.ports import PortHold
from harness.wait import wait_until

INFLUXD = "/usr/bin/influxd"
T0 = 1700000000.0
DB = "mirror"


class Influxd:
    """A real InfluxDB 1.6 on a port held for it across its restarts (harness/ports.py)."""

    def __init__(self, directory):
        self.directory = directory
        self.hold = PortHold()
        self.port = self.hold.port
        self.proc = None
        d = directory
        self.conf = d / "influxdb.conf"
        self.conf.write_text('reporting-disabled = true\nbind-address = "127.0.0.1:0"\n'
                             '[meta]\n  dir = "%s/meta"\n[data]\n  dir = "%s/data"\n  wal-dir = "%s/wal"\n'
                             '  query-log-enabled = false\n[http]\n  bind-address = "127.0.0.1:%d"\n'
                             '  log-enabled = false\n[monitor]\n  store-enabled = false\n' % (d, d, d, self.port))

    def start(self):
        if not os.access(INFLUXD, os.X_OK):
            pytest.fail("%s is missing: scripts/install-deps.sh installs influxdb" % INFLUXD)
        self.proc = subprocess.Popen([INFLUXD, "-config", str(self.conf)], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, universal_newlines=True)
        for line in self.proc.stdout:  # blocks on its log until it listens
            if re.search(r'msg="Listening on HTTP".*addr=127\.0\.0\.1:%d' % self.port, line):
                break
        else:
            raise AssertionError("influxd exited before listening")
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)

    def client(self):
        return InfluxDBClient(host="127.0.0.1", port=self.port, database=DB, timeout=30)

    def count(self, where=""):
        try:
            result = self.client().query('SELECT count("value") FROM "training_metrics"' + where)
        except Exception:  # database not created yet, or influxd down
            return 0
        points = list(result.get_points())
        return points[0]["count"] if points else 0


@pytest.fixture
def influxd(tmp_path):
    server = Influxd(tmp_path).start()
    yield server
    server.stop()
    server.hold.close()


def rows(run, steps, metric="loss"):
    return [{"project": "p", "run": run, "step": s, "time": T0 + s, "metrics": {metric: 1.0 / (s + 1)}}
            for s in steps]


def metric(server, name):
    return server.metric_value(name)


def test_points_reach_influxdb_and_a_backlog_arrives_exactly_once_after_an_outage(server_factory, influxd):
    server = server_factory("--mirror-influx", "http://127.0.0.1:%d" % influxd.port, "--mirror-influx-db", DB)
    server.write_ok(rows("r1", range(100)))
    server.write_ok(rows("r1", range(100), metric="accuracy"))
    wait_until(lambda: influxd.count() == 200, "200 points in InfluxDB")

    # The points as Grafana reads them: tags and fields.
    got = list(influxd.client().query(
        'SELECT "value", "step" FROM "training_metrics" WHERE "metric_name" = \'loss\' AND "run" = \'r1\' '
        'AND "project" = \'p\' ORDER BY time LIMIT 3').get_points())
    assert [(p["step"], p["value"]) for p in got] == [(0, 1.0), (1, 0.5), (2, 1.0 / 3)]
    assert got[0]["time"] == "2023-11-14T22:13:20Z"

    influxd.stop()
    # Ingest is never held up by the mirror: every write is acknowledged while InfluxDB is down.
    server.write_ok(rows("r2", range(50)))
    server.write_ok(rows("r1", range(100, 130)))
    wait_until(lambda: metric(server, "trainwatch_mirror_influx_send_errors_total") >= 1, "a failed delivery")
    wait_until(lambda: metric(server, "trainwatch_mirror_influx_queued_points") == 0 and
               metric(server, "trainwatch_mirror_influx_backlog_bytes") > 0, "the backlog in the outbox")
    assert "InfluxDB mirror cannot deliver" in server.stderr_text()

    server.restart()  # the outbox is durable: the backlog survives
    assert metric(server, "trainwatch_mirror_influx_backlog_bytes") > 0
    server.write_ok(rows("r2", range(50, 60)))

    influxd.start()
    wait_until(lambda: metric(server, "trainwatch_mirror_influx_backlog_bytes") == 0 and
               metric(server, "trainwatch_mirror_influx_queued_points") == 0, "the backlog delivered")
    assert influxd.count() == 200 + 50 + 30 + 10
    assert influxd.count(" WHERE \"run\" = 'r2'") == 60
    assert metric(server, "trainwatch_mirror_influx_points_dropped_total") == 0


def test_a_full_outbox_drops_and_says_so_without_refusing_writes(server_factory, tmp_path):
    with PortHold() as nothing_listens:
        server = server_factory("--mirror-influx", "http://127.0.0.1:%d" % nothing_listens.port,
                                "--mirror-influx-max-backlog", "2000")
        server.write_ok(rows("r1", range(200)))  # ~20 KB of line protocol: past the bound
        wait_until(lambda: metric(server, "trainwatch_mirror_influx_points_dropped_total") >= 1, "dropped points")
        assert "InfluxDB mirror is behind" in server.stderr_text()
        assert metric(server, "trainwatch_mirror_influx_backlog_bytes") <= 2000
        server.write_ok(rows("r1", range(200, 210)))  # still acknowledged


def test_bad_mirror_settings_are_refused_at_start(server_factory):
    server = server_factory("--mirror-influx", "influx:8086", start=False)
    with pytest.raises(RuntimeError) as e:
        server.start()
    assert "mirror_influx must start with http://" in str(e.value)
