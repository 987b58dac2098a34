"""Prometheus's HTTP API (/prometheus/api/v1/) against Debian's promtool, side by side with a real
Prometheus 2.42 holding the same samples (backfilled with `promtool tsdb create-blocks-from
openmetrics`): instant and range queries of the PromQL subset, labels, label values and series
must give the same answers."""
import math
import os
import re
import subprocess
import threading
import time

import pytest

from conftest import http

PROMETHEUS, PROMTOOL = "/usr/bin/prometheus", "/usr/bin/promtool"
SAMPLES = 180  # every 10 s for 30 minutes
T0 = (int(time.time()) - 4 * 3600) // 60 * 60  # old enough to lie in a backfilled block


def value(run, metric, i):
    if metric == "loss":
        return (1.0 if run == "r1" else 2.0) / (i + 1) + (3.0 if (run, i) == ("r1", 90) else 0.0)
    return 0.1 * 0.99 ** i if run == "r1" else 0.2 * 0.98 ** i


RUNS, METRICS = ("r1", "r2"), ("loss", "lr")


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    for tool in (PROMETHEUS, PROMTOOL):
        if not os.access(tool, os.X_OK):
            pytest.fail("%s is missing: scripts/install-deps.sh installs prometheus" % tool)
    d = tmp_path_factory.mktemp("prometheus")
    lines = []
    for run in RUNS:
        for metric in METRICS:
            for i in range(SAMPLES):
                lines.append('training_metrics{project="default",run="%s",metric_name="%s"} %r %d'
                             % (run, metric, value(run, metric, i), T0 + 10 * i))
    (d / "samples.om").write_text("\n".join(lines) + "\n# EOF\n")
    subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(d / "samples.om"), str(d / "data")],
                   check=True, stdout=subprocess.DEVNULL, timeout=120)
    (d / "prometheus.yml").write_text("global:\n  scrape_interval: 1h\n")
    proc = subprocess.Popen([PROMETHEUS, "--config.file=%s" % (d / "prometheus.yml"), "--storage.tsdb.path=%s" % (d / "data"),
                             "--web.listen-address=127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True)
    port = None
    for line in proc.stdout:  # blocks on its log until it listens and is ready
        m = re.search(r'msg="Listening on" address=127\.0\.0\.1:(\d+)', line)
        if m:
            port = int(m.group(1))
        if "Server is ready to receive web requests" in line:
            break
    assert port, "prometheus exited before listening"
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
    yield "http://127.0.0.1:%d" % port
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def trainwatch(module_server):
    module_server.write_ok([{"project": "default", "run": run, "step": i, "time": T0 + 10 * i,
                             "metrics": {metric: value(run, metric, i) for metric in METRICS}}
                            for run in RUNS for i in range(SAMPLES)])
    return module_server.url + "/prometheus"


def promtool(*args):
    out = subprocess.run([PROMTOOL, "query"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, timeout=60)
    return out.returncode, out.stdout


def parsed(text):
    """promtool's answer as {series: [(time, value), ...]}, values as floats."""
    series, current = {}, None
    for line in text.strip().splitlines():
        m = re.match(r"^scalar: (\S+) @\[([\d.]+)\]$", line)
        if m:
            series.setdefault("scalar", []).append((float(m.group(2)), float(m.group(1))))
            continue
        m = re.match(r"^(.*) => (\S+) @\[([\d.]+)\]$", line)
        if m:
            series.setdefault(m.group(1), []).append((float(m.group(3)), float(m.group(2))))
            continue
        m = re.match(r"^(.*) =>$", line)
        if m:
            current = m.group(1)
            series[current] = []
            continue
        m = re.match(r"^(\S+) @\[([\d.]+)\]$", line)
        assert m and current is not None, "unexpected promtool line %r" % line
        series[current].append((float(m.group(2)), float(m.group(1))))
    return series


def same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert len(a[k]) == len(b[k]), k
        for (ta, va), (tb, vb) in zip(a[k], b[k]):
            assert ta == tb, k
            assert (math.isnan(va) and math.isnan(vb)) or va == pytest.approx(vb, rel=1e-12, abs=1e-15), (k, ta)


INSTANT = [
    'training_metrics{metric_name="loss"}',
    'training_metrics{metric_name="loss"} > 0.5',
    'training_metrics{metric_name=~"lo.*", run!="r2"}',
    'training_metrics{metric_name="loss"} offset 5m',
    'sum by (run) (training_metrics)',
    'avg without (run) (training_metrics)',
    'max(training_metrics{metric_name="lr"})',
    'count(training_metrics)',
    'topk(1, training_metrics{metric_name="loss"})',
    'bottomk(2, training_metrics)',
    'rate(training_metrics{metric_name="lr"}[2m])',
    'increase(training_metrics{metric_name="loss"}[5m])',
    'delta(training_metrics{metric_name="lr"}[1m])',
    'deriv(training_metrics{metric_name="lr"}[5m])',
    'max_over_time(training_metrics{metric_name="loss"}[5m])',
    'avg_over_time(training_metrics[3m])',
    'training_metrics{run="r1"} / ignoring(run) training_metrics{run="r2"}',
    'training_metrics{metric_name="loss"} - on(run) training_metrics{metric_name="lr"}',
    '2 * training_metrics{metric_name="lr"} + 1',
    'training_metrics{metric_name="loss"} > bool 0.2',
    '1 + 1',
    'abs(-training_metrics{metric_name="lr"})',
]


@pytest.mark.parametrize("query", INSTANT)
def test_instant_queries_answer_as_prometheus(prometheus, trainwatch, query):
    at = str(T0 + 905)  # a moment after the spike at sample 90
    ours, theirs = promtool("instant", trainwatch, query, "--time=" + at), promtool("instant", prometheus, query, "--time=" + at)
    assert ours[0] == theirs[0] == 0, (ours, theirs)
    same(parsed(ours[1]), parsed(theirs[1]))
    assert parsed(theirs[1]), "the comparison needs an answer: %s" % query


@pytest.mark.parametrize("query", ['training_metrics{metric_name="loss"}', 'max_over_time(training_metrics[1m])',
                                   'sum by (metric_name) (rate(training_metrics[2m]))', '1 + 1'])
def test_range_queries_answer_as_prometheus(prometheus, trainwatch, query):
    args = ["range", "--start=%d" % (T0 + 60), "--end=%d" % (T0 + 1500), "--step=45s", query]
    ours, theirs = promtool(args[0], trainwatch, *args[1:4], args[4]), promtool(args[0], prometheus, *args[1:4], args[4])
    assert ours[0] == theirs[0] == 0, (ours, theirs)
    same(parsed(ours[1]), parsed(theirs[1]))


def test_labels_and_series_as_prometheus(prometheus, trainwatch):
    for name in ("run", "metric_name", "__name__", "project"):
        ours, theirs = promtool("labels", trainwatch, name), promtool("labels", prometheus, name)
        assert ours == theirs, name
    ours = promtool("series", trainwatch, '--match=training_metrics{run="r1"}')
    theirs = promtool("series", prometheus, '--match=training_metrics{run="r1"}')
    assert ours[0] == 0 and sorted(ours[1].splitlines()) == sorted(theirs[1].splitlines())


def test_errors_use_prometheus_envelope(trainwatch):
    r = http("GET", trainwatch + "/api/v1/query?query=sum(")
    assert r.status == 400
    body = r.json()
    assert body["status"] == "error" and body["errorType"] == "bad_data"
    assert "parse error" in body["error"]
    r = http("GET", trainwatch + "/api/v1/query?query=nope(1)")
    assert (r.status, r.json()["errorType"]) == (422, "execution")
    r = http("GET", trainwatch + "/api/v1/query_range?query=1&start=10&end=5&step=1")
    assert r.status == 400 and "end timestamp must not be before start time" in r.json()["error"]
    info = http("GET", trainwatch + "/api/v1/status/buildinfo").json()
    assert info["status"] == "success" and info["data"]["version"].startswith("2.")
