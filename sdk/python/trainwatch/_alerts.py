"""The alerts of one run, as they happen: `Run.alerts`, `Run.on_alert`, `Run.should_stop`.

Why the live WebSocket. The server pushes every alert change to the subscribers of its run the
moment its alert thread records it (`GET /api/v1/live`, docs/api.md), so an alert reaches the job
in one hop, with no polling interval. The gRPC ingest stream the client already holds only
answers batches (an alert would wait for the next ack, and the HTTP fallback has no stream at
all), and polling `/api/v1/alerts` adds half its interval to every alert. The feed subscribes to
its run with the metric list `[""]` (a name no series has): the server sends it alerts only,
never the run's own points back.

The feed is one daemon thread per run with one connection, started by the first use of the
alerts API: `log()` never waits for it or touches it. After every (re)connection it reads
`GET /api/v1/alerts?project&run` once, so alerts raised while it was away (or before it started)
arrive too; each alert is handed on once per firing (its id and `fired_at`).
"""
import collections
import json
import random
import ssl
import threading
import urllib.parse
import urllib.request
import warnings

from ._websocket import WebSocket, websocket_url

_BACKOFF_INITIAL_SECONDS = 0.1
_BACKOFF_MAX_SECONDS = 5.0
_LOOPBACK_HOSTS = ("localhost", "::1")


def _is_loopback(host):
    return host in _LOOPBACK_HOSTS or (host or "").startswith("127.")


def ssl_context(ca_file="", cert_file="", key_file=""):
    """The TLS context of the client's options (client.h: tls_ca_file, tls_cert_file, ...)."""
    context = ssl.create_default_context(cafile=ca_file or None)
    if cert_file:
        context.load_cert_chain(cert_file, key_file or None)
    return context


class AlertFeed:
    """Receives the alerts of (project, run) on its own thread and calls `on_firing(alert)` there
    for each alert once per firing (alert: the dict of GET /api/v1/alerts). Thread-safe."""

    def __init__(self, server, project, run, on_firing, api_key="", tls_context=None):
        self._server = server.rstrip("/")
        self._project = project
        self._run = run
        self._on_firing = on_firing
        self._headers = {"Authorization": "Bearer " + api_key} if api_key else {}
        self._tls = tls_context
        self._lock = threading.Lock()
        self._alerts = {}       # id -> the newest dict seen, in order of arrival
        self._fired = set()     # (id, fired_at) already handed on
        self._socket = None
        self._stopping = threading.Event()
        self.connected = threading.Event()  # set while subscribed; tests and benchmarks wait on it
        self.last_error = None
        self.received = collections.Counter()  # messages by type: what the subscription brings
        self._thread = threading.Thread(target=self._loop, name="trainwatch-alerts", daemon=True)

    def start(self):
        parts = urllib.parse.urlsplit(self._server)
        if self._headers and parts.scheme == "http" and not _is_loopback(parts.hostname):
            # the C++ client's rule (docs/sdk.md, "TLS"): never the key in clear text to another machine
            self.last_error = ("refusing to send the API key in clear text to %s (not this machine): "
                               "use an https:// server URL" % self._server)
            warnings.warn("trainwatch: alerts not received: " + self.last_error, stacklevel=3)
            return
        self._thread.start()

    def stop(self):
        self._stopping.set()
        with self._lock:
            sock = self._socket
        if sock is not None:
            sock.close()

    def alerts(self):
        """The newest state of every alert received, in order of arrival."""
        with self._lock:
            return list(self._alerts.values())

    # -- the feed's thread ------------------------------------------------------------------------

    def _loop(self):
        backoff = _BACKOFF_INITIAL_SECONDS
        while not self._stopping.is_set():
            try:
                self._serve_connection()
            except Exception as e:  # the connection broke or could not be made: try again
                self.last_error = "%s: %s" % (type(e).__name__, e)
            if self.connected.is_set():  # it had worked: a new outage starts from the shortest wait
                backoff = _BACKOFF_INITIAL_SECONDS
            self.connected.clear()
            if self._stopping.wait(backoff * random.uniform(0.5, 1.0)):
                return
            backoff = min(backoff * 2, _BACKOFF_MAX_SECONDS)

    def _serve_connection(self):
        sock = WebSocket(websocket_url(self._server, "/api/v1/live"), self._headers, self._tls)
        with self._lock:
            if self._stopping.is_set():
                sock.close()
                return
            self._socket = sock
        try:
            sock.send(json.dumps({"subscribe": {"project": self._project, "runs": [self._run],
                                                "metrics": [""]}}))
            reply = json.loads(sock.recv())
            if reply.get("type") != "subscribed":
                raise RuntimeError("live subscription refused: %s" % reply.get("error", reply))
            for alert in self._fetch_alerts():  # what fired before this connection
                self._receive(alert)
            self.connected.set()
            while True:
                message = json.loads(sock.recv())
                self.received[message.get("type")] += 1
                if message.get("type") == "alert":
                    self._receive(message["alert"])
        finally:
            with self._lock:
                self._socket = None
            sock.close()

    def _fetch_alerts(self):
        query = urllib.parse.urlencode({"project": self._project, "run": self._run,
                                        "limit": 10000})
        request = urllib.request.Request(self._server + "/api/v1/alerts?" + query,
                                         headers=self._headers)
        with urllib.request.urlopen(request, timeout=30, context=self._tls) as response:
            alerts = json.loads(response.read())["alerts"]
        return sorted(alerts, key=lambda a: a["id"])

    def _receive(self, alert):
        if alert.get("project") != self._project or alert.get("run") != self._run:
            return
        fired_at = alert.get("fired_at") or 0
        key = (alert["id"], fired_at)
        with self._lock:
            self._alerts[alert["id"]] = alert  # keeps its place: the order of first arrival
            new_firing = fired_at > 0 and key not in self._fired
            if new_firing:
                self._fired.add(key)
        if new_firing:
            self._on_firing(alert)
