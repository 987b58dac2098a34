"""A real `trainwatch serve` process for the tests.

The first start binds port 0 for HTTP and gRPC and reads the bound ports from the line the server
prints once it listens ("trainwatch is serving http://127.0.0.1:PORT (gRPC 127.0.0.1:PORT, ...)").
Later starts (restart(), kill9() then start()) bind those same ports again, since tests hold clients
and URLs aimed at them; between a stop and the next start the harness holds the ports (PortHold), so
nothing else is handed them while no server listens.
"""
import json
import os
import queue
import re
import signal
import subprocess
import threading
import time

from .client import http, loads, query_string, tls_client_context
from .ports import PortHold

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("TRAINWATCH_BIN", os.path.join(REPO, "build", "bin", "trainwatch"))

# tools/trainwatch_main.cc prints this line (and flushes it) once both listeners are bound.
SERVING_LINE = re.compile(r"^trainwatch is serving (https?)://\S+:(\d+) \(gRPC(?: over TLS)? \S+:(\d+), ", re.M)


def parse_serving_line(text):
    """(http_port, grpc_port) from a server's stdout, or None before it printed the line."""
    m = SERVING_LINE.search(text)
    return (int(m.group(2)), int(m.group(3))) if m else None


class Server:
    """One trainwatch server: a data directory, two ports, and at most one live process.

    `port` and `grpc_port` are None until the first start has read them (or hold_ports() reserved
    them before it). With `--tls-cert` among its flags it speaks HTTPS: pass `ca_file` (the CA that
    signed the certificate) and, for mutual TLS, `client_cert`/`client_key`; requests then use them."""

    def __init__(self, workdir, data_dir=None, extra_args=(), ca_file=None, client_cert=None, client_key=None):
        self.tls = "--tls-cert" in extra_args
        self.ca_file = ca_file
        self.ssl_context = tls_client_context(ca_file, client_cert, client_key) if self.tls else None
        self.workdir = str(workdir)
        os.makedirs(self.workdir, exist_ok=True)
        self.data_dir = data_dir or os.path.join(self.workdir, "data")
        self.port = None
        self.grpc_port = None
        self._holds = []  # PortHolds on port and grpc_port while no process of ours listens there
        self.extra_args = list(extra_args)
        self.proc = None
        self.starts = 0
        self.log_paths = []  # one stderr file per start, in order
        self._stdout_path = None

    @property
    def url(self):
        assert self.port is not None, "the server has no port before its first start (see hold_ports())"
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    @property
    def ws_url(self):
        return self.url.replace("http", "ws", 1)

    def hold_ports(self):
        """Reserves the two ports now, before the first start (for a test that needs the address of
        a server that is not up yet); the start binds them. Returns self."""
        if self.port is None:
            self._holds = [PortHold(), PortHold()]
            self.port, self.grpc_port = (h.port for h in self._holds)
        elif not self._holds and not self.alive():
            try:
                self._holds = [PortHold(self.port), PortHold(self.grpc_port)]
            except OSError:  # still closing: start() retries on "address in use"
                self.release_ports()
        return self

    def release_ports(self):
        for h in self._holds:
            h.close()
        self._holds = []

    def command(self):
        return [BIN, "serve", "--data-dir", self.data_dir,
                "--listen", "127.0.0.1:%d" % (self.port or 0),
                "--grpc-listen", "127.0.0.1:%d" % (self.grpc_port or 0)] + self.extra_args

    def spawn(self):
        """Starts the process without waiting; returns it."""
        assert self.proc is None or self.proc.poll() is not None, "server already running"
        self.starts += 1
        err_path = os.path.join(self.workdir, "stderr.%d.log" % self.starts)
        self._stdout_path = os.path.join(self.workdir, "stdout.%d.log" % self.starts)
        self.log_paths.append(err_path)
        with open(err_path, "wb") as err:
            self.proc = subprocess.Popen(self.command(), stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL)
        # The serving line is the event a start waits for: a thread copies stdout to its file and
        # hands over the ports once the line has come (or None when the process ends without it).
        self._serving = queue.Queue(maxsize=1)
        threading.Thread(target=self._copy_stdout, args=(self.proc.stdout, self._stdout_path, self._serving),
                         daemon=True).start()
        return self.proc

    @staticmethod
    def _copy_stdout(pipe, path, serving):
        told = False
        with open(path, "wb") as out:
            for line in iter(pipe.readline, b""):
                out.write(line)
                out.flush()
                ports = None if told else parse_serving_line(line.decode("utf-8", "replace"))
                if ports:
                    serving.put(ports)
                    told = True
        if not told:
            serving.put(None)

    def start(self, timeout=30):
        """Starts, reads the bound ports and waits for /healthz.

        A restart binds the ports of the first start again. The harness held them since the last
        process was reaped, so no other socket can have taken them; the retry on "address in use" is
        for a process that died on its own (not through kill9()/terminate()), whose ports were free
        for a while, and for the moment the kernel takes to close a killed process's sockets."""
        deadline = time.monotonic() + timeout
        while True:
            self.spawn()
            if self.wait_serving(deadline) and self.wait_healthy(deadline):
                self.release_ports()  # our process listens on them now
                return self
            rc = self.proc.poll()
            log = self.stderr_text()
            retry = rc is not None and ("in use" in log or "cannot listen" in log or "address" in log)
            if not retry or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("trainwatch did not come up (rc=%s):\n%s" % (rc, self.tail()))

    def wait_serving(self, deadline):
        """Waits for the serving line on the process's stdout; sets port and grpc_port from it.
        False when the process ends without it (or, as a hang guard, at the deadline)."""
        try:
            ports = self._serving.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return False
        if not ports:
            return False
        self.port, self.grpc_port = ports
        return True

    def wait_healthy(self, deadline):
        """The server prints its serving line once it listens: one request answers."""
        try:
            return http("GET", self.url + "/healthz", timeout=max(1.0, deadline - time.monotonic()),
                        context=self.ssl_context).status == 200
        except OSError:
            return False

    def kill9(self):
        """SIGKILL and reap: the crash the durability tests simulate. The ports stay held."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
            self.hold_ports()

    def terminate(self, timeout=30):
        """SIGTERM (drain and exit); returns the exit code. Falls back to SIGKILL on a hang. The ports
        stay held."""
        if not self.proc or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("server did not exit within %ds of SIGTERM" % timeout)
        finally:
            if self.proc.poll() is not None and self.port is not None:
                self.hold_ports()

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

    def close(self):
        """Stops the process and lets the ports go (end of the test)."""
        self.stop()
        self.release_ports()

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
    """Builds servers of `server_class` under one temporary directory and stops them all at the end."""

    def __init__(self, tmp_path, server_class=Server):
        self.tmp_path = tmp_path
        self.server_class = server_class
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
            s.close()
