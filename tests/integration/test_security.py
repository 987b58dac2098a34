"""A real server attacked as a hostile client or a foreign web page would (issue 13): each attack
gets a clear 4xx, or is refused, and the server keeps serving everyone else.
"""
import json
import os
import resource
import socket
import threading

import pytest
import websocket

from conftest import Server, http

EVIL = "http://evil.example"


def raw(port, data, read=True):
    """Sends raw bytes on a new connection; returns what the server answers until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(data)
        if not read:
            return b""
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
        return out


def rss_bytes(server):
    with open("/proc/%d/status" % server.proc.pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS for the server")


def nested(depth):
    return "[" * depth + "]" * depth


# -- hostile input ----------------------------------------------------------------------------------


def test_a_config_nested_100k_deep_is_a_400_not_a_crash(server):
    body = '{"config": {"a": %s}}' % nested(100000)  # ~200 KB
    r = server.post("/api/v1/runs/update", body, params={"run": "x"})
    assert r.status == 400 and "nested deeper than 64 levels" in r.json()["error"], r
    # The same document through the NDJSON write and in a protobuf's config_json field.
    r = server.write('{"run": "x", "step": 0, "config": {"a": %s}, "metrics": {"loss": 1}}\n' % nested(100000))
    assert r.status == 400 and "too deep at byte" in r.json()["errors"][0]["error"], r
    assert server.get("/healthz").status == 200
    # A config of sensible depth is still taken.
    r = server.post("/api/v1/runs/update", '{"config": {"a": %s}}' % nested(10), params={"run": "x"})
    assert r.status == 200, r
    assert server.alive()


def test_nested_websocket_messages_get_an_error_and_the_socket_lives(server):
    ws = websocket.create_connection(server.ws_url + "/api/v1/live", timeout=30)
    ws.send(nested(100000))
    reply = json.loads(ws.recv())
    assert reply["type"] == "error" and "nested deeper" in reply["error"], reply
    ws.send(json.dumps({"subscribe": {"project": "p"}}))
    assert json.loads(ws.recv()) == {"type": "subscribed"}
    ws.close()


# -- a foreign web page -----------------------------------------------------------------------------


def test_a_foreign_page_can_change_nothing(server):
    server.write_ok([{"run": "r", "step": s, "metrics": {"loss": 1.0}} for s in range(5)])
    simple = {"Content-Type": "text/plain", "Origin": EVIL}  # a CORS "simple request": no preflight
    for path, params, body in (("/api/v1/silences", None, '{"duration": "52w"}'),
                               ("/api/v1/runs/rewind", {"run": "r"}, '{"step": 0}'),
                               ("/api/v1/write", None, '{"run": "evil", "step": 0, "metrics": {"x": 1}}\n'),
                               ("/api/v1/rules/reload", None, "")):
        r = server.post(path, body, params=params, headers=simple)
        assert r.status == 403 and EVIL in r.json()["error"], (path, r)
        # Declaring JSON does not help a foreign origin either (and would need a preflight).
        r = server.post(path, body, params=params, headers={"Origin": EVIL})
        assert r.status == 403, (path, r)
    # Without an Origin (curl, the SDK), a browser's body type is still refused.
    r = server.post("/api/v1/silences", '{"duration": "52w"}', headers={"Content-Type": "text/plain"})
    assert r.status == 415 and "application/json" in r.json()["error"], r
    r = server.post("/api/v1/write", '{"run": "evil", "step": 0, "metrics": {"x": 1}}\n',
                    headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status == 415, r
    # Nothing changed.
    assert server.get_json("/api/v1/silences", {"all": 1})["silences"] == []
    assert server.get("/api/v1/run", {"run": "evil"}).status == 404
    assert len(server.get_json("/api/v1/series", {"run": "r", "metric": "loss"})["series"][0]["points"]) == 5
    # The dashboard's own origin may.
    own = {"Origin": server.url, "Content-Type": "application/json"}
    r = server.post("/api/v1/silences", '{"duration": "1h", "comment": "own page"}', headers=own)
    assert r.status == 200, r


def test_a_websocket_from_a_foreign_origin_is_refused(server):
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        websocket.create_connection(server.ws_url + "/api/v1/live", origin=EVIL, timeout=30)
    assert refused.value.status_code == 403
    ws = websocket.create_connection(server.ws_url + "/api/v1/live", origin=server.url, timeout=30)
    ws.send(json.dumps({"subscribe": {"project": "p"}}))
    assert json.loads(ws.recv()) == {"type": "subscribed"}
    ws.close()


def test_a_foreign_host_name_is_refused_dns_rebinding(server_factory):
    server = server_factory("--allowed-hosts", "trainwatch.internal,*.corp.example")
    for host in ("attacker.example", "attacker.example:%d" % server.port, "trainwatch.internal.evil.example"):
        for path in ("/api/v1/runs", "/"):
            r = http("GET", server.url + path, headers={"Host": host})
            assert r.status == 403 and "--allowed-hosts" in r.json()["error"], (host, path, r)
    for host in ("localhost:%d" % server.port, "127.0.0.1:%d" % server.port, "[::1]:%d" % server.port,
                 "trainwatch.internal:%d" % server.port, "gpu7.corp.example", "LocalHost"):
        assert http("GET", server.url + "/api/v1/runs", headers={"Host": host}).status == 200, host


def test_cors_only_for_configured_origins(server_factory):
    app = "https://app.example"
    server = server_factory("--cors-origins", app)
    preflight = {"Origin": app, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type"}
    r = http("OPTIONS", server.url + "/api/v1/write", headers=preflight)
    assert r.status == 204 and r.headers["Access-Control-Allow-Origin"] == app, r.headers
    assert "POST" in r.headers["Access-Control-Allow-Methods"], r.headers
    r = http("OPTIONS", server.url + "/api/v1/write", headers=dict(preflight, Origin=EVIL))
    assert "Access-Control-Allow-Origin" not in r.headers, r.headers
    r = server.post("/api/v1/write", '{"run": "c", "step": 0, "metrics": {"x": 1}}\n',
                    headers={"Origin": app, "Content-Type": "application/x-ndjson"})
    assert r.status == 200 and r.headers["Access-Control-Allow-Origin"] == app, r.headers
    r = server.get("/api/v1/runs", headers={"Origin": EVIL})
    assert r.status == 200 and "Access-Control-Allow-Origin" not in r.headers, r.headers


def test_the_dashboard_is_sent_with_browser_protections(server):
    r = server.get("/")
    csp = r.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp, csp
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert r.headers["Referrer-Policy"] == "no-referrer"
    assert r.headers["X-Frame-Options"] == "DENY"


# -- before authentication --------------------------------------------------------------------------


def test_unauthenticated_bodies_are_never_read(server_factory):
    server = server_factory("--api-key", "s3cret")
    size = 60 << 20
    head = ("POST /api/v1/write HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n"
            "Content-Length: %d\r\n" % size)
    # A client that asks first gets the 401 instead of `100 Continue`.
    answer = raw(server.port, (head + "Expect: 100-continue\r\n\r\n").encode())
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
    assert b"100 Continue" not in answer

    # Eight clients that send 60 MiB each without asking: answered and cut off after the header.
    idle = rss_bytes(server)
    body = b"x" * size
    answers = []

    def send():
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
            s.sendall(head.encode() + b"\r\n")
            try:
                s.sendall(body)
            except OSError:
                pass  # the server closed the connection: what we want
            try:
                answers.append(s.recv(4096))
            except OSError:
                answers.append(b"(reset)")

    threads = [threading.Thread(target=send) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    grown = rss_bytes(server) - idle
    assert grown < 20 << 20, "RSS grew by %d MB" % (grown >> 20)
    assert any(a.startswith(b"HTTP/1.1 401") for a in answers), answers
    assert http("GET", server.url + "/healthz").status == 200
    keyed = {"Authorization": "Bearer s3cret", "Content-Type": "application/x-ndjson"}
    r = server.post("/api/v1/write", '{"run": "k", "step": 0, "metrics": {"x": 1}}\n', headers=keyed)
    assert r.status == 200, r
    r = server.post("/api/v1/write", '{"run": "k", "step": 1, "metrics": {"x": 1}}\n',
                    headers=dict(keyed, Authorization="Bearer s3cres"))
    assert r.status == 401, r


# -- slow clients -----------------------------------------------------------------------------------


def open_partial_headers(port, count):
    """`count` connections that each send the start of a request header and then nothing."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, count + 512)), hard))
    sockets = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        sockets.append(s)
    return sockets


def test_a_slow_header_flood_does_not_lock_anyone_out(server):
    flood = open_partial_headers(server.port, 1030)
    try:
        # The bound: /healthz within 2 s during the flood (it waited ~60 s before).
        assert http("GET", server.url + "/healthz", timeout=2).status == 200
        r = server.write([{"run": "during-flood", "step": 0, "metrics": {"loss": 1.0}}], timeout=2)
        assert r.status == 200, r
        # Room was made by closing the oldest connections that were still waiting for a header.
        assert server.metric_value("trainwatch_http_connections_evicted_total") >= 1030 - 256
        assert server.metric_value("trainwatch_http_connections") <= 256 + 2
    finally:
        for s in flood:
            s.close()


class LimitedServer(Server):
    """A server started under `prlimit --nofile=N:N`: a host whose hard limit is low."""
    nofile = 400

    def command(self):
        return ["prlimit", "--nofile=%d:%d" % (self.nofile, self.nofile)] + super().command()


def test_a_low_file_limit_caps_connections_below_it(tmp_path):
    server = LimitedServer(tmp_path / "limited").start()
    try:
        assert "the open-file limit caps HTTP connections" in server.stderr_text()
        flood = open_partial_headers(server.port, 400)  # more than the process could hold
        try:
            assert http("GET", server.url + "/healthz", timeout=2).status == 200
            # The store kept its descriptors: a write is acknowledged durably during the flood.
            r = server.write([{"run": "low-limit", "step": 0, "metrics": {"loss": 1.0}}], timeout=2)
            assert r.status == 200, r
            assert server.metric_value("trainwatch_http_connections") <= 400 - 256
        finally:
            for s in flood:
                s.close()
    finally:
        server.stop()


def test_the_accept_loop_pauses_when_descriptors_run_out(server):
    # Lowered under the server's feet to just above what it holds (something else in the process
    # took the rest): accept() fails with EMFILE, and must neither spin nor stop accepting.
    in_use = len(os.listdir("/proc/%d/fd" % server.proc.pid))
    resource.prlimit(server.proc.pid, resource.RLIMIT_NOFILE, (in_use + 20, in_use + 20))
    flood = open_partial_headers(server.port, 100)
    try:
        assert http("GET", server.url + "/healthz", timeout=10).status == 200
        assert server.metric_value("trainwatch_http_accept_backoffs_total") >= 1
        assert server.metric_value("trainwatch_http_connections_evicted_total") >= 1
    finally:
        for s in flood:
            s.close()
    assert server.alive()


# -- secrets ----------------------------------------------------------------------------------------

SECRETS = {"password": "hunter2-pw", "OPENAI_API_KEY": "sk-live-4242", "db": {"apiKey": "AKIA-77"},
           "hf_token": "hf_abcdef"}


def test_secrets_in_a_config_are_masked_before_they_are_stored(server):
    config = dict(SECRETS, lr=0.001, max_tokens=512, tokenizer="bpe")
    server.write_ok([{"run": "s", "step": 0, "config": config, "tags": ["token=tag-secret-9", "baseline"],
                      "metrics": {"loss": 1.0}}])
    run = server.get_json("/api/v1/run", {"run": "s"})
    assert run["config"]["password"] == "***" and run["config"]["db"]["apiKey"] == "***", run["config"]
    assert run["config"]["max_tokens"] == 512 and run["config"]["tokenizer"] == "bpe", run["config"]
    assert sorted(run["tags"]) == ["baseline", "token=***"], run["tags"]
    # The value cannot be probed through a config filter either.
    assert server.get_json("/api/v1/runs", {"config.password": "hunter2-pw"})["runs"] == []
    # Nowhere: answers, export, the server's log; after a restart (replayed from the log) too.
    server.restart()
    seen = (server.get("/api/v1/run", {"run": "s"}).text + server.get("/api/v1/runs").text +
            server.get("/api/v1/export", {"run": "s"}).text + server.stderr_text(0) + server.stderr_text())
    for value in ("hunter2-pw", "sk-live-4242", "AKIA-77", "hf_abcdef", "tag-secret-9"):
        assert value not in seen, value


def test_the_server_masks_configured_patterns_too(server_factory):
    server = server_factory("--secret-patterns", "seed_phrase,pin")
    server.write_ok([{"run": "p", "step": 0, "config": {"wallet_seed_phrase": "correct horse", "card_pin": 1234,
                                                        "pinned": "yes"}, "metrics": {"x": 1}}])
    config = server.get_json("/api/v1/run", {"run": "p"})["config"]
    assert config == {"wallet_seed_phrase": "***", "card_pin": "***", "pinned": "yes"}, config


def test_a_failed_slack_delivery_never_logs_the_webhook_token(server_factory, tmp_path):
    from receivers import HttpReceiver
    slack = HttpReceiver("slack").start()
    try:
        slack.fail(500)
        path = tmp_path / "alerting.yml"
        path.write_text("receivers:\n  - name: chat\n    slack: {url: \"%s/services/T000/B000/TOKEN-S3CR3T\"}\n"
                        "routes:\n  - {receiver: chat}\n" % slack.url)
        server = server_factory("--alerting", str(path))
        server.write_ok([{"run": "r", "step": s, "metrics": {"loss": 1.0}} for s in range(5)] +
                        [{"run": "r", "step": 5, "metrics": {"loss": float("nan")}}])
        # The outbox logs a failure before it schedules the retry: once the second attempt arrives,
        # the first one's log line is written.
        first = slack.wait_for(lambda r: r.answered == 500, timeout=60, what="a failed delivery")
        slack.wait_for(lambda r: r.answered == 500 and r is not first, timeout=60, what="its retry")
        log = server.stderr_text()
        assert "notification failed, will retry" in log, log
        assert "TOKEN-S3CR3T" not in log and "/services/" not in log, log
        assert "127.0.0.1" in log  # the host is still named
    finally:
        slack.stop()


# -- scoped keys ------------------------------------------------------------------------------------


def keys_cli(*args, check=True):
    import subprocess
    from conftest import BIN
    done = subprocess.run([BIN, "keys"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env={"PATH": os.environ.get("PATH", "")})
    if check:
        assert done.returncode == 0, done.stderr
    return done


def as_key(key, **headers):
    return dict(headers, Authorization="Bearer " + key)


def test_scoped_keys_do_what_their_scope_allows(server_factory):
    server = server_factory("--api-key", "admin-s3cret")
    admin = ("--server", server.url, "--api-key", "admin-s3cret")
    read = keys_cli("create", "--name", "dash", "--scope", "read", *admin).stdout.strip()
    write = keys_cli("create", "--name", "ci", "--scope", "write", *admin).stdout.strip()
    vision = keys_cli("create", "--name", "vision-ci", "--scope", "write", "--project", "vision", *admin).stdout.strip()
    assert read.startswith("tw_") and write != read

    line = '{"project": "%s", "run": "r", "step": %d, "metrics": {"loss": 1.0}}\n'
    nd = {"Content-Type": "application/x-ndjson"}
    # read: reads, cannot write.
    r = server.post("/api/v1/write", line % ("default", 0), headers=as_key(read, **nd))
    assert r.status == 403 and "scope read" in r.json()["error"], r
    assert server.get("/api/v1/runs", headers=as_key(read)).status == 200
    # write: writes, cannot acknowledge, silence, reload or manage keys.
    assert server.post("/api/v1/write", line % ("default", 0), headers=as_key(write, **nd)).status == 200
    for path, body in (("/api/v1/alerts/ack", '{"id": 1}'), ("/api/v1/silences", '{"duration": "1h"}'),
                       ("/api/v1/keys", '{"name": "x"}'), ("/api/v1/keys/revoke", '{"name": "dash"}')):
        r = server.post(path, body, headers=as_key(write))
        assert r.status == 403 and "needs admin" in r.json()["error"], (path, r)
    assert server.get("/api/v1/keys", headers=as_key(write)).status == 403
    # A project-bound key: its project only, in reads and in the lines of a write.
    assert server.post("/api/v1/write", line % ("vision", 0), headers=as_key(vision, **nd)).status == 200
    r = server.post("/api/v1/write", line % ("vision", 1) + line % ("nlp", 1), headers=as_key(vision, **nd))
    assert r.status == 400 and "may not write to project 'nlp'" in r.json()["errors"][0]["error"], r
    assert r.json()["points_accepted"] == 1
    assert server.get("/api/v1/runs", {"project": "vision"}, headers=as_key(vision)).status == 200
    r = server.get("/api/v1/runs", {"project": "default"}, headers=as_key(vision))
    assert r.status == 403 and "does not see project 'default'" in r.json()["error"], r
    assert server.get("/api/v1/run", {"project": "nlp", "run": "r"}, headers=as_key(write)).status == 404
    ws = websocket.create_connection(server.ws_url + "/api/v1/live", header=["Authorization: Bearer " + vision])
    ws.send(json.dumps({"subscribe": {"project": "default"}}))
    assert "does not see project 'default'" in json.loads(ws.recv())["error"]
    ws.close()

    # Listing shows names and scopes, never a key; a revoked key is refused at once.
    listing = keys_cli("list", *admin).stdout
    assert "dash" in listing and "vision-ci" in listing and read not in listing and write not in listing, listing
    keys_cli("revoke", "dash", *admin)
    r = server.get("/api/v1/runs", headers=as_key(read))
    assert r.status == 401 and "revoked" in r.json()["error"], r
    # An expired key is refused at once too.
    expired = keys_cli("create", "--name", "brief", "--expires", "0s", *admin).stdout.strip()
    r = server.get("/api/v1/runs", headers=as_key(expired))
    assert r.status == 401 and "'brief' has expired" in r.json()["error"], r

    # Keys survive restarts; only their hashes are on disk.
    server.restart()
    assert server.post("/api/v1/write", line % ("default", 2), headers=as_key(write, **nd)).status == 200
    assert server.get("/api/v1/runs", headers=as_key(read)).status == 401
    stored = open(os.path.join(server.data_dir, "keys.json")).read()
    assert write.split("_")[-1] not in stored and "ci" in stored


def test_keys_on_a_stopped_data_directory(server_factory, tmp_path):
    server = server_factory(start=False)
    data = ("--data-dir", server.data_dir)
    os.makedirs(server.data_dir, exist_ok=True)
    key = keys_cli("create", "--name", "first-admin", "--scope", "admin", *data).stdout.strip()
    server.start()
    # The stored key makes the server keyed, with no --api-key.
    assert server.get("/api/v1/runs").status == 401
    assert server.get("/api/v1/runs", headers=as_key(key)).status == 200
    assert server.get("/api/v1/info", headers=as_key(key)).json()["api_key_required"] is True
    # While it runs, the directory is its own: the CLI goes through the API instead.
    busy = keys_cli("list", *data, check=False)
    assert busy.returncode == 1 and "in use" in busy.stderr, busy.stderr
    assert "first-admin" in keys_cli("list", "--server", server.url, "--api-key", key).stdout


# -- audit ------------------------------------------------------------------------------------------


def test_every_action_is_in_the_audit_log_even_after_kill9(server_factory):
    server = server_factory("--api-key", "admin-s3cret")
    admin = as_key("admin-s3cret")
    ci = keys_cli("create", "--name", "ci", "--scope", "write", "--server", server.url,
                  "--api-key", "admin-s3cret").stdout.strip()
    assert server.post("/api/v1/write", '{"project": "p", "run": "r", "step": 0, "metrics": {"x": 1}}\n',
                       headers=as_key(ci, **{"Content-Type": "application/x-ndjson"})).status == 200
    assert server.post("/api/v1/silences", '{"duration": "1h"}', headers=as_key(ci)).status == 403
    r = server.post("/api/v1/silences", '{"project": "p", "duration": "1h", "comment": "maintenance"}', headers=admin)
    assert r.status == 200, r
    assert server.get("/api/v1/runs", headers={"Authorization": "Bearer guessing"}).status == 401
    server.kill9()  # every answer above was given once its entry was durable
    server.start()

    entries = server.get("/api/v1/audit", headers=admin).json()["entries"]
    seen = [(e["key"], e["action"], e["outcome"]) for e in reversed(entries)]
    assert seen == [("api-key", "POST /api/v1/keys", 200),
                    ("ci", "POST /api/v1/write", 200),
                    ("ci", "POST /api/v1/silences", 403),
                    ("api-key", "POST /api/v1/silences", 200),
                    ("", "GET /api/v1/runs", 401)], seen
    assert all(e["remote"] == "127.0.0.1" for e in entries), entries
    assert entries[-1]["target"] == "key=ci scope=write", entries[-1]
    assert "scope write" in entries[2]["detail"], entries[2]
    # No key ever appears in the audit log, only names.
    raw = "".join(open(os.path.join(server.data_dir, "audit", f)).read()
                  for f in os.listdir(os.path.join(server.data_dir, "audit")))
    assert ci not in raw and "admin-s3cret" not in raw and "guessing" not in raw
    # Filters and paging; the audit log is for admins.
    failures = server.get("/api/v1/audit", {"failures": 1}, headers=admin).json()["entries"]
    assert [e["outcome"] for e in failures] == [401, 403], failures
    assert len(server.get("/api/v1/audit", {"key": "ci", "limit": 1}, headers=admin).json()["entries"]) == 1
    assert server.get("/api/v1/audit", headers=as_key(ci)).status == 403
    # The command line reads it too, from a running server.
    import subprocess
    from conftest import BIN
    out = subprocess.run([BIN, "audit", "--server", server.url, "--api-key", "admin-s3cret", "--key", "ci"],
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    assert "POST /api/v1/write" in out and "POST /api/v1/silences" in out and "403" in out, out


def test_allow_lists_globally_and_per_key(server_factory):
    server = server_factory("--allow-from", "127.0.0.1/32", "--api-key", "admin-s3cret")
    # From another address (all of 127/8 is this machine): closed without an answer.
    with socket.socket() as s:
        s.bind(("127.0.0.2", 0))
        s.settimeout(30)
        s.connect(("127.0.0.1", server.port))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        try:
            assert s.recv(4096) == b""
        except ConnectionResetError:
            pass
    metrics = server.get("/metrics", headers=as_key("admin-s3cret")).text
    assert "trainwatch_http_connections_denied_total 1" in metrics, metrics
    # A key bound to a network it is not used from.
    remote_only = keys_cli("create", "--name", "cluster", "--scope", "write", "--allow-from", "10.0.0.0/8",
                           "--server", server.url, "--api-key", "admin-s3cret").stdout.strip()
    r = server.get("/api/v1/runs", headers=as_key(remote_only))
    assert r.status == 403 and "may not be used from 127.0.0.1" in r.json()["error"], r
    bad = keys_cli("create", "--name", "typo", "--allow-from", "10.0.0/8", "--server", server.url,
                   "--api-key", "admin-s3cret", check=False)
    assert bad.returncode == 1 and "allow_from" in bad.stderr, bad.stderr
