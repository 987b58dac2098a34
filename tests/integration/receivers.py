"""Real notification receivers on 127.0.0.1 for the alerting tests: an HTTP endpoint that records
every request (webhook, Slack, Alertmanager's own webhook), a minimal SMTP server, and a Debian
`prometheus-alertmanager` process. No mocks: the server under test talks to them over TCP.

Each receiver runs its own threads, holds a loopback port of its own from construction to close()
(harness.PortHold: kept across stop/start, so the server's configuration stays valid while a receiver
is down, and refusing connections then) and records what it got in order.
`wait_for(predicate, timeout)` polls that record and fails with the receiver's log.
"""
import email
import email.policy
import http.server
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse

import pytest

from conftest import PortHold, loads
from conftest import http as http_request
from harness import wait_until

ALERTMANAGER_BIN = "/usr/bin/prometheus-alertmanager"


class Recorded:
    """Thread-safe, append-only list of what a receiver got, with waiting."""

    def __init__(self, describe):
        self._items = []
        self._cond = threading.Condition()
        self._describe = describe  # item -> one line for logs

    def add(self, item):
        with self._cond:
            self._items.append(item)
            self._cond.notify_all()

    def items(self):
        with self._cond:
            return list(self._items)

    def wait_for(self, predicate, timeout, what, log):
        """The first recorded item for which predicate(item) is true, waiting up to `timeout` s."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for item in self._items:
                    if predicate(item):
                        return item
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("%s: nothing matching %s within %.1fs; got:\n%s" % (log[0], what, timeout, log[1]()))
                self._cond.wait(min(left, 0.1))

    def log(self):
        items = self.items()
        return "\n".join("  [%d] %s" % (i, self._describe(x)) for i, x in enumerate(items)) or "  (nothing)"


# ---------------------------------------------------------------------------------------------------
# HTTP


class Request:
    """One request an HttpReceiver answered (or refused)."""

    def __init__(self, method, path, headers, body, answered):
        self.method = method
        self.path = path
        self.headers = headers  # name (lower case) -> value
        self.body = body        # raw bytes, exactly as received
        self.answered = answered  # the status code sent back
        self.received_at = time.time()

    def json(self):
        return loads(self.body)

    def __repr__(self):
        return "%s %s -> %d %s" % (self.method, self.path, self.answered, self.body[:400].decode("utf-8", "replace"))


class HttpReceiver:
    """An HTTP server recording every request. Answers 200 {} by default; `fail(status, seconds)`
    makes it answer `status` for a while (requests are still recorded, with the status sent).
    `stop()` closes the port (connections refused) and `start()` reopens the same one; `close()`
    stops and lets the port go."""

    def __init__(self, name="http"):
        self.name = name
        self._hold = PortHold()
        self.port = self._hold.port
        self.requests = Recorded(repr)
        self._fail_status = None
        self._fail_until = 0.0
        self._server = None
        self._thread = None
        self._conns = set()
        self._lock = threading.Lock()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self):
        assert self._server is None, "%s already running" % self.name
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                with receiver._lock:
                    receiver._conns.add(self.connection)

            def finish(self):
                with receiver._lock:
                    receiver._conns.discard(self.connection)
                super().finish()

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status = receiver._status_now()
                receiver.requests.add(Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                                              body, status))
                reply = b"{}" if status < 300 else b'{"error":"receiver told to fail"}'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(reply)
                self.close_connection = True

            do_POST = do_PUT = do_GET = _handle

            def log_message(self, *args):
                pass

        class Server(http.server.ThreadingHTTPServer):
            allow_reuse_address = True
            daemon_threads = True

        self._server = Server(("127.0.0.1", self.port), Handler)  # beside the hold: SO_REUSEADDR
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="receiver-" + self.name, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Closes the listening socket and every open connection: from now on connections are refused."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            for conn in list(self._conns):
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self._thread.join(timeout=5)
        self._server = None

    def close(self):
        self.stop()
        self._hold.close()

    @property
    def running(self):
        return self._server is not None

    def fail(self, status=500, seconds=3600):
        """Answers `status` to every request for the next `seconds` (until ok())."""
        self._fail_status = status
        self._fail_until = time.monotonic() + seconds

    def ok(self):
        self._fail_status = None

    def _status_now(self):
        if self._fail_status is not None and time.monotonic() < self._fail_until:
            return self._fail_status
        return 200

    def received(self, path=None):
        return [r for r in self.requests.items() if path is None or r.path == path]

    def wait_for(self, predicate, timeout=10, what="the expected request"):
        return self.requests.wait_for(predicate, timeout, what, (self.name + " at " + self.url, self.log))

    def wait_json(self, predicate, timeout=10, what="the expected JSON body", path=None):
        """The first request (to `path`, when given) whose JSON body satisfies predicate(body)."""
        def match(r):
            if path is not None and r.path != path:
                return False
            try:
                body = r.json()
            except ValueError:
                return False
            return predicate(body)
        return self.wait_for(match, timeout, what)

    def log(self):
        return self.requests.log()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()


# ---------------------------------------------------------------------------------------------------
# SMTP


class Envelope:
    def __init__(self, mail_from, rcpt_to, data):
        self.mail_from = mail_from
        self.rcpt_to = rcpt_to
        self.data = data  # the message bytes after dot-unstuffing
        self.message = email.message_from_bytes(data, policy=email.policy.default)
        self.received_at = time.time()

    @property
    def subject(self):
        return str(self.message["Subject"])

    @property
    def text(self):
        part = self.message.get_body(preferencelist=("plain",)) or self.message
        return part.get_content()

    def __repr__(self):
        return "from=%s to=%s subject=%r" % (self.mail_from, self.rcpt_to, self.message["Subject"])


def _address(arg):
    """'<a@b>' out of 'FROM:<a@b> SIZE=12' (the angle brackets dropped)."""
    arg = arg.split(":", 1)[1].strip() if ":" in arg else arg
    arg = arg.split(" ")[0]
    return arg.strip("<>")


class SmtpReceiver:
    """A minimal SMTP server (RFC 5321 subset: EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT),
    recording one Envelope per accepted message. `transcript` keeps every command line."""

    def __init__(self, name="smtp"):
        self.name = name
        self._hold = PortHold()
        self.port = self._hold.port
        self.messages = Recorded(repr)
        self.transcript = []
        self._sock = None
        self._thread = None
        self._stopping = False

    @property
    def url(self):
        return "smtp://127.0.0.1:%d" % self.port

    def start(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(16)
        s.settimeout(0.1)
        self._sock, self._stopping = s, False
        self._thread = threading.Thread(target=self._accept_loop, name="smtp-" + self.name, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        if self._sock is None:
            return
        self._stopping = True
        self._thread.join(timeout=5)
        self._sock.close()
        self._sock = None

    def close(self):
        self.stop()
        self._hold.close()

    def _accept_loop(self):
        while not self._stopping:
            try:
                conn, _ = self._sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._session, args=(conn,), daemon=True).start()

    def _session(self, conn):
        conn.settimeout(10)
        f = conn.makefile("rb")

        def reply(line):
            conn.sendall(line.encode("ascii") + b"\r\n")

        mail_from, rcpt_to = None, []
        try:
            reply("220 127.0.0.1 ESMTP trainwatch-test")
            while True:
                raw = f.readline()
                if not raw:
                    return
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                self.transcript.append(line)
                verb = line.split(" ", 1)[0].upper()
                arg = line[len(verb):].strip()
                if verb == "EHLO":
                    reply("250-127.0.0.1 hello")
                    reply("250-8BITMIME")
                    reply("250 SMTPUTF8")
                elif verb == "HELO":
                    reply("250 127.0.0.1 hello")
                elif verb == "MAIL":
                    mail_from, rcpt_to = _address(arg), []
                    reply("250 OK")
                elif verb == "RCPT":
                    if mail_from is None:
                        reply("503 MAIL first")
                        continue
                    rcpt_to.append(_address(arg))
                    reply("250 OK")
                elif verb == "DATA":
                    if not rcpt_to:
                        reply("503 RCPT first")
                        continue
                    reply("354 end with <CRLF>.<CRLF>")
                    lines = []
                    while True:
                        data_line = f.readline()
                        if not data_line:
                            return
                        if data_line in (b".\r\n", b".\n"):
                            break
                        if data_line.startswith(b"."):
                            data_line = data_line[1:]  # dot-unstuffing
                        lines.append(data_line)
                    self.messages.add(Envelope(mail_from, rcpt_to, b"".join(lines)))
                    mail_from, rcpt_to = None, []
                    reply("250 OK queued")
                elif verb == "RSET":
                    mail_from, rcpt_to = None, []
                    reply("250 OK")
                elif verb == "NOOP":
                    reply("250 OK")
                elif verb == "QUIT":
                    reply("221 bye")
                    return
                else:
                    reply("502 command not implemented")
        except OSError:
            return
        finally:
            f.close()
            conn.close()

    def wait_for(self, predicate=lambda m: True, timeout=10, what="a message"):
        return self.messages.wait_for(predicate, timeout, what, (self.name + " at " + self.url, self.log))

    def log(self):
        return self.messages.log() + "\n  transcript: " + " | ".join(self.transcript[-30:])

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()


# ---------------------------------------------------------------------------------------------------
# Prometheus Alertmanager

AM_CONFIG = """\
route:
  receiver: hook
  group_by: ['...']
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: "%s/am-webhook"
        send_resolved: true
"""


class Alertmanager:
    """Debian's prometheus-alertmanager on a free loopback port, routing every alert (each alert its
    own group: group_by ['...']) to `self.webhook`, an HttpReceiver, with send_resolved.

    What its API shows (checked against 0.25): GET /api/v2/alerts lists only alerts whose endsAt is
    unset or in the future; an alert posted with an endsAt in the past (resolved) disappears from the
    list at once. Its webhook then gets a notification with "status": "resolved" within about
    group_interval."""

    def __init__(self, workdir):
        if not os.access(ALERTMANAGER_BIN, os.X_OK):
            pytest.fail("%s is not installed (install-deps.sh installs prometheus-alertmanager)" % ALERTMANAGER_BIN,
                        pytrace=False)
        self.workdir = str(workdir)
        os.makedirs(self.workdir, exist_ok=True)
        self._hold = PortHold()  # Go's listener sets SO_REUSEADDR: it binds the held port
        self.port = self._hold.port
        self.webhook = HttpReceiver("alertmanager-webhook")
        self.proc = None
        self.log_path = os.path.join(self.workdir, "alertmanager.log")

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self, timeout=20):
        self.webhook.start()
        config = os.path.join(self.workdir, "am.yml")
        with open(config, "w") as f:
            f.write(AM_CONFIG % self.webhook.url)
        storage = os.path.join(self.workdir, "am-data")
        shutil.rmtree(storage, ignore_errors=True)
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [ALERTMANAGER_BIN, "--config.file=" + config, "--storage.path=" + storage,
                 "--web.listen-address=127.0.0.1:%d" % self.port, "--cluster.listen-address=",
                 "--log.level=debug"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        def ready():
            if self.proc.poll() is not None:
                raise RuntimeError("alertmanager exited (rc=%s):\n%s" % (self.proc.returncode, self.tail()))
            try:
                return http_request("GET", self.url + "/-/ready", timeout=1).status == 200
            except OSError:
                return False
        try:
            wait_until(ready, "alertmanager to be ready", timeout=timeout)
        except AssertionError:
            self.stop()
            raise RuntimeError("alertmanager not ready within %ds:\n%s" % (timeout, self.tail()))
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.webhook.stop()

    def close(self):
        self.stop()
        self.webhook.close()
        self._hold.close()

    def alerts(self, **params):
        """GET /api/v2/alerts (params such as active=false, filter=['kind="nan"'])."""
        query = urllib.parse.urlencode(params, doseq=True)
        r = http_request("GET", self.url + "/api/v2/alerts" + ("?" + query if query else ""), timeout=5)
        assert r.status == 200, r
        return json.loads(r.body)

    def wait_alerts(self, predicate, timeout=10, what="the expected alert list", **params):
        """Polls alerts(**params) until predicate(list) is true; returns the list."""
        seen = []

        def matching():  # the list may be empty and still match: wrapped to be truthy
            seen[:] = [self.alerts(**params)]
            return (seen[0],) if predicate(seen[0]) else None
        try:
            return wait_until(matching, what, timeout=timeout)[0]
        except AssertionError:
            raise AssertionError("alertmanager: no %s within %.1fs; /api/v2/alerts = %s\n%s"
                                 % (what, timeout, json.dumps(seen[0] if seen else None, indent=1)[:3000], self.tail()))

    def tail(self, lines=30):
        try:
            with open(self.log_path, "rb") as f:
                text = f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return ""
        return "--- alertmanager log (last %d lines)\n%s" % (lines, "\n".join(text[-lines:]))

    def log(self):
        return self.tail() + "\n--- alertmanager webhook\n" + self.webhook.log()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()


__all__ = ["HttpReceiver", "SmtpReceiver", "Alertmanager", "Request", "Envelope", "ALERTMANAGER_BIN"]
