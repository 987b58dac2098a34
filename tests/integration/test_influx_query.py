"""InfluxQL against trainwatch and against Debian's InfluxDB 1.6, side by side: the same points are
written to both with Debian's python3-influxdb client, and the answers to the queries Grafana's
InfluxDB data source sends (the "Training overview" panel, its variables, the editor's metadata
statements) must be the same: values, columns, series and tags. Also the `influx` shell."""
import math
import os
import re
import subprocess
import threading

import pytest
from influxdb import InfluxDBClient
from influxdb.exceptions import InfluxDBClientError

from conftest import http

INFLUXD = "/usr/bin/influxd"
T0_MS = 1700000000000
STEPS = 60


@pytest.fixture(scope="module")
def influxd(tmp_path_factory):
    """A real InfluxDB 1.6 on a port it picks itself (read from its log)."""
    if not os.access(INFLUXD, os.X_OK):
        pytest.fail("%s is missing: scripts/install-deps.sh installs influxdb" % INFLUXD)
    d = tmp_path_factory.mktemp("influxd")
    conf = d / "influxdb.conf"
    conf.write_text('reporting-disabled = true\nbind-address = "127.0.0.1:0"\n'
                    '[meta]\n  dir = "%s/meta"\n[data]\n  dir = "%s/data"\n  wal-dir = "%s/wal"\n'
                    '  query-log-enabled = false\n[http]\n  bind-address = "127.0.0.1:0"\n  log-enabled = false\n'
                    '[monitor]\n  store-enabled = false\n' % (d, d, d))
    proc = subprocess.Popen([INFLUXD, "-config", str(conf)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True)
    port = None
    for line in proc.stdout:  # blocks on its log until it says where it listens
        m = re.search(r'msg="Listening on HTTP".*addr=127\.0\.0\.1:(\d+)', line)
        if m:
            port = int(m.group(1))
            break
    assert port, "influxd exited before listening"
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()  # keep draining
    yield port
    proc.terminate()
    proc.wait(timeout=30)


def points():
    out = []
    for step in range(STEPS):
        t = T0_MS + step * 1000
        for run, scale in (("r1", 1.0), ("r2", 2.0)):
            out.append({"measurement": "training_metrics", "tags": {"metric_name": "loss", "run": run},
                        "fields": {"value": scale / (step + 1) + (0.5 if step == 37 else 0.0), "step": step},
                        "time": t})
            out.append({"measurement": "training_metrics", "tags": {"metric_name": "accuracy", "run": run},
                        "fields": {"value": step / STEPS / scale, "step": step}, "time": t})
        out.append({"measurement": "cpu", "tags": {"host": "h1", "cpu": "cpu-total"},
                    "fields": {"usage_idle": 50.0 + (step % 7)}, "time": t})
    return out


@pytest.fixture(scope="module")
def pair(module_server, influxd):
    """(trainwatch client, InfluxDB client), both holding the same points in database "training"."""
    clients = (InfluxDBClient(host="127.0.0.1", port=module_server.port, database="training", timeout=30),
               InfluxDBClient(host="127.0.0.1", port=influxd, database="training", timeout=30))
    for c in clients:
        c.create_database("training")
        assert c.write_points(points(), time_precision="ms", batch_size=100)
    return clients


def normalised(value):
    """Numbers compared as floats (InfluxDB writes 90 where trainwatch writes 90.0), to 12 digits."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float("%.12g" % value)
    if isinstance(value, list):
        return [normalised(v) for v in value]
    if isinstance(value, dict):
        return {k: normalised(v) for k, v in value.items()}
    return value


def same_answer(pair, q, **params):
    trainwatch, influx = pair
    ours = trainwatch.query(q, **params).raw
    theirs = influx.query(q, **params).raw
    assert normalised(ours) == normalised(theirs), q
    return ours


PANEL = ("SELECT mean(\"value\") FROM \"training_metrics\" WHERE (\"metric_name\" = 'loss') AND "
         "time >= %dms and time <= %dms GROUP BY time(10s) fill(null)" % (T0_MS - 5000, T0_MS + 70000))


def test_the_training_overview_panel(pair):
    answer = same_answer(pair, PANEL, epoch="ms")
    values = answer["series"][0]["values"]
    assert len(values) == 9 and values[0][1] is None and values[1][1] is not None
    same_answer(pair, PANEL)  # RFC 3339 times
    same_answer(pair, PANEL.replace("GROUP BY time(10s)", "GROUP BY time(10s), \"run\""), epoch="ms")
    same_answer(pair, PANEL.replace("fill(null)", "fill(none)"), epoch="ms")
    same_answer(pair, PANEL.replace("fill(null)", "fill(0)"), epoch="ms")
    same_answer(pair, PANEL.replace("fill(null)", "fill(previous)"), epoch="ms")


def test_aggregates_and_selectors_show_the_spike(pair):
    for fn in ("max", "min", "first", "last", "count", "sum", "spread", "median", "percentile(\"value\", 90)"):
        call = fn if "(" in fn else "%s(\"value\")" % fn
        same_answer(pair, "SELECT %s FROM training_metrics WHERE metric_name = 'loss' GROUP BY run" % call, epoch="ms")
    spike = same_answer(pair, "SELECT max(\"value\") FROM training_metrics WHERE metric_name = 'loss' AND run = 'r1' "
                              "AND time >= %dms AND time < %dms" % (T0_MS + 30000, T0_MS + 40000), epoch="ms")
    assert spike["series"][0]["values"][0] == [T0_MS + 37000, pytest.approx(1 / 38 + 0.5)]


def test_raw_points_ordering_and_limits(pair):
    same_answer(pair, "SELECT \"value\", \"step\" FROM training_metrics WHERE run = 'r2' AND metric_name = 'accuracy' "
                      "ORDER BY time DESC LIMIT 5 OFFSET 2", epoch="s")
    same_answer(pair, "SELECT usage_idle FROM cpu WHERE host =~ /h[0-9]/ LIMIT 10")
    same_answer(pair, "SELECT mean(usage_idle) FROM cpu WHERE time >= %dms AND time < %dms GROUP BY time(20s), * "
                      "fill(none)" % (T0_MS, T0_MS + 60000), epoch="ms")
    same_answer(pair, "SELECT max(value) FROM training_metrics WHERE metric_name != 'loss' GROUP BY run SLIMIT 1")


def test_the_metadata_grafana_sends(pair):
    trainwatch, influx = pair
    assert trainwatch.get_list_measurements() == influx.get_list_measurements()
    same_answer(pair, "SHOW MEASUREMENTS WITH MEASUREMENT =~ /train/ LIMIT 100")
    same_answer(pair, "SHOW TAG KEYS FROM \"training_metrics\"")
    same_answer(pair, "SHOW TAG VALUES FROM \"training_metrics\" WITH KEY = \"run\"")
    same_answer(pair, "SHOW TAG VALUES FROM \"training_metrics\" WITH KEY = \"metric_name\" WHERE run = 'r1'")
    same_answer(pair, "SHOW TAG VALUES WITH KEY IN (\"host\", \"cpu\")")
    same_answer(pair, "SHOW FIELD KEYS FROM \"training_metrics\"")
    same_answer(pair, "SHOW RETENTION POLICIES ON \"training\"")
    assert {"name": "training"} in trainwatch.get_list_database()


def test_errors_are_influxdbs(pair, module_server):
    trainwatch, influx = pair
    for q in ("SELEC value FROM m", "SELECT FROM m", "SELECT value FROM m WHERE"):
        ours = http("GET", module_server.url + "/query?db=training&q=" + q.replace(" ", "%20"))
        theirs = http("GET", "http://127.0.0.1:%d/query?db=training&q=%s" % (influx._port, q.replace(" ", "%20")))
        assert (ours.status, ours.json()) == (theirs.status, theirs.json()), q
    for q in ("SELECT mean(value), value FROM training_metrics", "SELECT value FROM training_metrics GROUP BY time(1m)",
              "SELECT value FROM nowhere.autogen.training_metrics"):
        with pytest.raises(InfluxDBClientError) as ours:
            trainwatch.query(q)
        with pytest.raises(InfluxDBClientError) as theirs:
            influx.query(q)
        assert str(ours.value) == str(theirs.value), q


def test_the_influx_shell(pair, module_server):
    out = subprocess.run(["influx", "-host", "127.0.0.1", "-port", str(module_server.port), "-database", "training",
                          "-format", "csv", "-precision", "ms",
                          "-execute", "SELECT last(\"value\") FROM training_metrics WHERE metric_name = 'loss' GROUP BY run"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=60)
    assert out.returncode == 0, out.stdout
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "name,tags,time,last"
    assert lines[1] == "training_metrics,run=r1,%d,%s" % (T0_MS + (STEPS - 1) * 1000, repr(1.0 / STEPS))
