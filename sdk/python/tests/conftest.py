"""Fixtures for the Python SDK's tests: real `trainwatch serve` processes on free loopback ports.

Run with the built package on the path and the server binary in TRAINWATCH_BIN:

    PYTHONPATH=build/python TRAINWATCH_BIN=build/bin/trainwatch python3 -m pytest -q sdk/python/tests

`server` is a fresh server with a temporary data directory; `server_factory(*flags)` starts more.
A failing test gets the tail of each server's stderr in its report.
"""
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN = os.environ.get("TRAINWATCH_BIN", os.path.join(REPO, "build", "bin", "trainwatch"))


def free_port():
    """A loopback port the kernel just handed out (closed again: a small race remains)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _parse_constant(token):
    return float(token)  # NaN, Infinity, -Infinity as bare tokens


def _parse_int(text):
    return -0.0 if text == "-0" else int(text)  # "-0" is how negative zero is written


def _from_json_value(v):
    """Query responses write non-finite numbers as the strings "NaN", "Infinity", "-Infinity"."""
    if isinstance(v, str) and v in ("NaN", "Infinity", "-Infinity"):
        return float(v.replace("Infinity", "inf"))
    return v


class Server:
    """One `trainwatch serve` process on its own data directory and ports."""

    def __init__(self, workdir, extra_args=()):
        self.workdir = str(workdir)
        os.makedirs(self.workdir, exist_ok=True)
        self.data_dir = os.path.join(self.workdir, "data")
        self.port = free_port()
        self.grpc_port = free_port()
        self.extra_args = list(extra_args)
        self.proc = None
        self.api_key = None
        self.stderr_path = os.path.join(self.workdir, "stderr.log")

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self, timeout=30):
        command = [BIN, "serve", "--data-dir", self.data_dir,
                   "--listen", "127.0.0.1:%d" % self.port,
                   "--grpc-listen", "127.0.0.1:%d" % self.grpc_port] + self.extra_args
        with open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err,
                                         stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                if self.get("/healthz", timeout=2)[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.02)
        self.stop()
        raise RuntimeError("trainwatch did not come up:\n" + self.tail())

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def tail(self, lines=40):
        try:
            with open(self.stderr_path, "rb") as f:
                text = f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])

    # -- requests -----------------------------------------------------------------------------------

    def get(self, path, params=None, timeout=30):
        """(status, body bytes); raises OSError when the server cannot be reached."""
        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        headers = {"Authorization": "Bearer " + self.api_key} if self.api_key else {}
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                        timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def get_json(self, path, params=None, expect=200):
        status, body = self.get(path, params)
        assert status == expect, (path, params, status, body[:500])
        return json.loads(body, parse_constant=_parse_constant)

    def run_info(self, project, run):
        return self.get_json("/api/v1/run", {"project": project, "run": run})

    def points(self, project, run, metric):
        """[(step, time, value)] of one series, raw; [] when the run lacks the metric."""
        status, body = self.get("/api/v1/series", {"project": project, "run": run, "metric": metric})
        if status != 200:
            return []
        series = json.loads(body, parse_int=_parse_int)["series"]
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
        deadline = time.monotonic() + timeout
        while True:
            points = self.points(project, run, metric)
            if len(points) >= count or time.monotonic() > deadline:
                return points
            time.sleep(0.05)


class ServerFactory:
    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.servers = []

    def __call__(self, *extra_args):
        s = Server(self.tmp_path / ("server%d" % len(self.servers)), extra_args)
        self.servers.append(s)
        return s.start()

    def stop_all(self):
        for s in self.servers:
            s.stop()


@pytest.fixture
def server_factory(tmp_path):
    assert os.access(BIN, os.X_OK), "no trainwatch binary at %s (set TRAINWATCH_BIN)" % BIN
    factory = ServerFactory(tmp_path)
    yield factory
    factory.stop_all()


@pytest.fixture
def server(server_factory):
    return server_factory()


@pytest.fixture(scope="module")
def module_server(tmp_path_factory):
    """One server shared by a module's tests (each test uses its own run ids)."""
    assert os.access(BIN, os.X_OK), "no trainwatch binary at %s (set TRAINWATCH_BIN)" % BIN
    s = Server(tmp_path_factory.mktemp("shared")).start()
    yield s
    s.stop()


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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        seen = set()
        for value in getattr(item, "funcargs", {}).values():
            servers = value.servers if isinstance(value, ServerFactory) else [value]
            for s in servers:
                if isinstance(s, Server) and id(s) not in seen:
                    seen.add(id(s))
                    report.sections.append(("trainwatch server %s stderr" % s.url, s.tail()))
