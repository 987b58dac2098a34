"""Fixtures that run a real trainwatch server process.

`server` is a fresh server on a temporary data directory; `server_factory(*extra_args)` starts more
(with extra flags, or on a shared data directory). Each server's stdout/stderr go to files under its
temp directory; when a test fails, the tail of every server it used is attached to the report.
"""
import json
import os
import signal
import socket
import ssl
import struct
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("TRAINWATCH_BIN", os.path.join(REPO, "build", "bin", "trainwatch"))


def free_port():
    """A port the kernel just handed out for 127.0.0.1 (closed again, so a small race remains)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------------------
# HTTP helper


class Response:
    def __init__(self, status, body, headers):
        self.status = status
        self.body = body  # bytes
        self.headers = headers

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")

    def json(self):
        return loads(self.body)

    def __repr__(self):
        return "Response(%d, %r)" % (self.status, self.body[:500])


def tls_client_context(ca_file, cert=None, key=None):
    """An SSL context that trusts `ca_file` (and presents cert/key for mutual TLS)."""
    context = ssl.create_default_context(cafile=str(ca_file))
    if cert:
        context.load_cert_chain(str(cert), str(key))
    return context


def http(method, url, body=None, headers=None, timeout=30, context=None):
    """One request; returns a Response for every HTTP status. Connection errors raise OSError.
    `context`: the SSL context for https:// URLs."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as r:
            return Response(r.status, r.read(), dict(r.headers))
    except urllib.error.HTTPError as e:
        return Response(e.code, e.read(), dict(e.headers))


def _parse_int(text):
    # "-0" is a valid JSON number for negative zero; Python would make it the integer 0.
    return -0.0 if text == "-0" else int(text)


def loads(text):
    """json.loads that keeps "-0" as -0.0 (NaN/Infinity bare tokens are accepted as usual)."""
    return json.loads(text, parse_int=_parse_int)


def query_string(params):
    """params: dict or list of pairs (repeatable keys)."""
    return urllib.parse.urlencode(params if not isinstance(params, dict) else list(params.items()))


# ---------------------------------------------------------------------------------------------------
# The write rules, in Python


def bits(x):
    return struct.pack("<d", x)


class SeriesModel:
    """One series under the documented write rules: a step above every visible one is appended; the
    same bits at a visible step are a no-op; a different value at a visible step starts a new timeline
    (every visible point at that step or later becomes superseded); an empty step is filled in."""

    def __init__(self):
        self.visible = {}     # step -> (time, value)
        self.superseded = []  # (step, time, value)
        self.rewinds = 0

    def write(self, step, time, value):
        """Applies one point; returns 'unchanged' or 'written'."""
        if step in self.visible:
            if bits(self.visible[step][1]) == bits(value):
                return "unchanged"
            hidden = [s for s in self.visible if s >= step]
            for s in sorted(hidden):
                self.superseded.append((s,) + self.visible.pop(s))
            self.rewinds += 1
        self.visible[step] = (time, value)
        return "written"

    def points(self):
        return [(s,) + self.visible[s] for s in sorted(self.visible)]


# ---------------------------------------------------------------------------------------------------
# The server process


class Server:
    """One trainwatch server: a data directory, two ports, and at most one live process.

    With `--tls-cert` among its flags it speaks HTTPS: pass `ca_file` (the CA that signed the
    certificate) and, for mutual TLS, `client_cert`/`client_key`; requests then use them."""

    def __init__(self, workdir, data_dir=None, extra_args=(), ca_file=None, client_cert=None, client_key=None):
        self.tls = "--tls-cert" in extra_args
        self.ca_file = ca_file
        self.ssl_context = tls_client_context(ca_file, client_cert, client_key) if self.tls else None
        self.workdir = str(workdir)
        os.makedirs(self.workdir, exist_ok=True)
        self.data_dir = data_dir or os.path.join(self.workdir, "data")
        self.port = free_port()
        self.grpc_port = free_port()
        self.extra_args = list(extra_args)
        self.proc = None
        self.starts = 0
        self.log_paths = []  # one stderr file per start, in order

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    @property
    def ws_url(self):
        return "%s://127.0.0.1:%d" % ("wss" if self.tls else "ws", self.port)

    def command(self):
        return [BIN, "serve", "--data-dir", self.data_dir,
                "--listen", "127.0.0.1:%d" % self.port,
                "--grpc-listen", "127.0.0.1:%d" % self.grpc_port] + self.extra_args

    def spawn(self):
        """Starts the process without waiting; returns it."""
        assert self.proc is None or self.proc.poll() is not None, "server already running"
        self.starts += 1
        err_path = os.path.join(self.workdir, "stderr.%d.log" % self.starts)
        out_path = os.path.join(self.workdir, "stdout.%d.log" % self.starts)
        self.log_paths.append(err_path)
        with open(err_path, "wb") as err, open(out_path, "wb") as out:
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        return self.proc

    def start(self, timeout=30):
        """Starts and waits for /healthz. After a kill -9 the ports may take a moment to free up."""
        deadline = time.monotonic() + timeout
        while True:
            self.spawn()
            if self.wait_healthy(deadline):
                return self
            rc = self.proc.poll()
            log = self.stderr_text()
            retry = rc is not None and ("in use" in log or "cannot listen" in log or "address" in log)
            if not retry or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("trainwatch did not come up (rc=%s):\n%s" % (rc, self.tail()))
            time.sleep(0.2)

    def wait_healthy(self, deadline):
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                if http("GET", self.url + "/healthz", timeout=2, context=self.ssl_context).status == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.02)
        return False

    def kill9(self):
        """SIGKILL and reap: the crash the durability tests simulate."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def terminate(self, timeout=30):
        """SIGTERM (drain and exit); returns the exit code. Falls back to SIGKILL on a hang."""
        if not self.proc or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("server did not exit within %ds of SIGTERM" % timeout)

    def restart(self, kill=False):
        """Stops (SIGTERM, or SIGKILL when kill=True) and starts again on the same dir and ports."""
        if kill:
            self.kill9()
        else:
            self.terminate()
        return self.start()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            try:
                self.terminate(timeout=20)
            except AssertionError:
                pass

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stderr_text(self, which=-1):
        try:
            with open(self.log_paths[which], "rb") as f:
                return f.read().decode("utf-8", "replace")
        except (IndexError, OSError):
            return ""

    def tail(self, lines=40):
        out = []
        for i, path in enumerate(self.log_paths[-3:]):
            text = open(path, "rb").read().decode("utf-8", "replace").splitlines()
            out.append("--- %s (last %d lines)" % (os.path.basename(path), lines))
            out.extend(text[-lines:])
        return "\n".join(out)

    # -- requests -----------------------------------------------------------------------------------

    def get(self, path, params=None, **kw):
        url = self.url + path + ("?" + query_string(params) if params else "")
        kw.setdefault("context", self.ssl_context)
        return http("GET", url, **kw)

    def post(self, path, body, params=None, headers=None, **kw):
        """POSTs `body` as JSON unless `headers` name another Content-Type (the server refuses
        bodies whose type its route does not take, as it must refuse a browser's text/plain)."""
        url = self.url + path + ("?" + query_string(params) if params else "")
        headers = dict(headers or {})
        if not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = "application/json"
        kw.setdefault("context", self.ssl_context)
        return http("POST", url, body=body, headers=headers, **kw)

    def write(self, lines, **kw):
        """POSTs NDJSON: `lines` is a str/bytes body or a list of dicts / str lines."""
        if isinstance(lines, (list, tuple)):
            lines = "\n".join(l if isinstance(l, str) else json.dumps(l) for l in lines) + "\n"
        return self.post("/api/v1/write", lines, headers={"Content-Type": "application/x-ndjson"}, **kw)

    def write_ok(self, lines, **kw):
        r = self.write(lines, **kw)
        assert r.status == 200, r
        return r.json()

    def get_json(self, path, params=None, expect=200):
        r = self.get(path, params)
        assert r.status == expect, (path, params, r)
        return r.json()

    def export(self, run, project=None):
        params = {"run": run}
        if project:
            params["project"] = project
        r = self.get("/api/v1/export", params, timeout=120)
        assert r.status == 200, r
        # split on "\n" only: str.splitlines() would also split inside names holding U+2028 and friends
        return [loads(line) for line in r.text.split("\n") if line.strip()]

    def metric_value(self, name):
        """Sum of the samples of a Prometheus metric in /metrics."""
        total, found = 0.0, False
        for line in self.get("/metrics").text.splitlines():
            if line.startswith("#"):
                continue
            key = line.split(" ")[0]
            if key == name or key.startswith(name + "{"):
                total += float(line.rsplit(" ", 1)[1])
                found = True
        assert found, "metric %s not in /metrics" % name
        return total


class ServerFactory:
    server_class = Server  # a subclass's factory may build a subclass (sdk/python/tests)

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.servers = []

    def __call__(self, *extra_args, data_dir=None, start=True, **tls):
        """tls: ca_file, client_cert, client_key for a server started with --tls-cert (Server)."""
        s = self.server_class(self.tmp_path / ("server%d" % len(self.servers)), data_dir=data_dir,
                              extra_args=extra_args, **tls)
        self.servers.append(s)
        if start:
            s.start()
        return s

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


def _servers_of(item):
    found = []
    for value in getattr(item, "funcargs", {}).values():
        if isinstance(value, Server):
            found.append(value)
        elif isinstance(value, ServerFactory):
            found.extend(value.servers)
    found.extend(getattr(item.module, "_SHARED_SERVERS", []))
    return found


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        seen = set()
        for s in _servers_of(item):
            if id(s) in seen:
                continue
            seen.add(id(s))
            report.sections.append(("trainwatch server %s stderr" % s.url, s.tail()))


@pytest.fixture(scope="module")
def module_server(request, tmp_path_factory):
    """One server shared by a module's tests; flags from the module's SERVER_ARGS."""
    assert os.access(BIN, os.X_OK), "no trainwatch binary at %s (set TRAINWATCH_BIN)" % BIN
    s = Server(tmp_path_factory.mktemp("shared"), extra_args=getattr(request.module, "SERVER_ARGS", ()))
    request.module._SHARED_SERVERS = getattr(request.module, "_SHARED_SERVERS", []) + [s]
    s.start()
    yield s
    s.stop()
