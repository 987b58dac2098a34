"""Fixtures for the Python SDK's tests: real `trainwatch serve` processes, from the test harness shared
with the integration tests (tests/harness).

Run with the built package on the path and the server binary in TRAINWATCH_BIN:

    PYTHONPATH=build/python TRAINWATCH_BIN=build/bin/trainwatch python3 -m pytest -q -rs sdk/python/tests

`server` is a fresh server with a temporary data directory; `server_factory(*flags)` starts more;
`refusing_url` is an address where nothing listens. A failing test gets the tail of each server's
stderr in its report.
"""
import os
import sys
import time
import warnings

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "tests"))  # the harness package

import harness  # noqa: E402
from harness import BIN, wait_until  # noqa: E402,F401
from harness.fixtures import *  # noqa: E402,F401,F403 (fixtures and the report hook)


def _from_json_value(v):
    """Query responses write non-finite numbers as the strings "NaN", "Infinity", "-Infinity"."""
    if isinstance(v, str) and v in ("NaN", "Infinity", "-Infinity"):
        return float(v.replace("Infinity", "inf"))
    return v


class Server(harness.Server):
    """The harness's server process, with the reads the SDK tests need and an optional API key sent
    on every request."""

    def __init__(self, workdir, data_dir=None, extra_args=(), **tls):
        super().__init__(workdir, data_dir=data_dir, extra_args=extra_args, **tls)
        self.api_key = None

    def get(self, path, params=None, **kw):
        if self.api_key:
            kw["headers"] = dict(kw.get("headers") or {}, Authorization="Bearer " + self.api_key)
        return super().get(path, params, **kw)

    def run_info(self, project, run):
        return self.get_json("/api/v1/run", {"project": project, "run": run})

    def points(self, project, run, metric):
        """[(step, time, value)] of one series, raw; [] when the run lacks the metric."""
        r = self.get("/api/v1/series", {"project": project, "run": run, "metric": metric})
        if r.status != 200:
            return []
        series = r.json()["series"]
        if not series or "points" not in series[0]:
            return []
        return [(int(p[0]), p[1], float(_from_json_value(p[2]))) for p in series[0]["points"]]

    def metric_names(self, project, run):
        return [m["name"] for m in self.metrics(project, run)]

    def metrics(self, project, run):
        """The run's metrics, as /api/v1/metrics lists them (the `metrics` array of /api/v1/run)."""
        body = self.get_json("/api/v1/metrics", {"project": project, "run": run})
        return body["metrics"] if isinstance(body, dict) else body

    def wait_points(self, project, run, metric, count, timeout=20):
        """Polls until the series holds at least `count` points; returns them."""
        points = []

        def enough():
            points[:] = self.points(project, run, metric)
            return len(points) >= count
        try:
            wait_until(enough, "%d points of %s" % (count, metric), timeout=timeout)
        except AssertionError:
            pass  # the caller asserts on what arrived
        return points


@pytest.fixture(scope="session")
def server_class():
    return Server


@pytest.fixture(autouse=True)
def isolated_sdk(monkeypatch, tmp_path):
    """Each test starts without TRAINWATCH_* settings, with its own spool directory, and leaves
    no run open behind it."""
    for name in list(os.environ):
        if name.startswith("TRAINWATCH_") and name != "TRAINWATCH_BIN" and \
                name != "TRAINWATCH_BUILD_DIR":
            monkeypatch.delenv(name)
    monkeypatch.setenv("TRAINWATCH_SPOOL_DIR", str(tmp_path / "spool"))
    yield
    import trainwatch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while trainwatch.run is not None:
            trainwatch.run.finish()
