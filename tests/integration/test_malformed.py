"""Bad input of every kind gets a clear error, is never stored, and disturbs nothing else."""
import re
import socket
import subprocess

import pytest

from conftest import BIN, http
from harness import ingest_pb

SERVER_ARGS = ()  # the shared server runs with the default limits (64 MiB bodies, 10,000 metrics per run)


# ---------------------------------------------------------------------------------------------------
# helpers


def run_exists(server, run, project="default"):
    r = server.get("/api/v1/run", {"project": project, "run": run})
    assert r.status in (200, 404), r
    return r.status == 200


def write_raw(server, body, content_type="application/x-ndjson"):
    return server.post("/api/v1/write", body, headers={"Content-Type": content_type})


def raw_exchange(port, data, read_timeout=5.0, shut_write=False):
    """Sends bytes on a fresh connection and returns everything read until close or timeout."""
    with socket.create_connection(("127.0.0.1", port), timeout=read_timeout) as s:
        try:
            s.sendall(data)
            if shut_write:
                s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        chunks = []
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except (socket.timeout, ConnectionResetError):
            pass
        return b"".join(chunks)


def status_line(response):
    return response.split(b"\r\n", 1)[0]


# Protobuf bodies, from the classes generated from ingest.proto (harness.ingest_pb).
def pb_write_request(run, steps, times, columns, project="pb"):
    """WriteRequest{runs: [RunBatch{project, run, steps, times, metrics}]} as bytes; columns: {name: [values]}."""
    pb = ingest_pb.load()
    batch = pb.RunBatch(project=project, run=run, steps=steps, times=times,
                        metrics=[pb.MetricColumn(name=name, values=values) for name, values in columns.items()])
    return pb.WriteRequest(runs=[batch]).SerializeToString()


def pb_sparse(run, steps, columns, project="pb"):
    """A RunBatch whose columns carry explicit rows: columns = {name: (rows, values)}."""
    pb = ingest_pb.load()
    batch = pb.RunBatch(project=project, run=run, steps=steps, times=[1767225600.0 + s for s in steps],
                        metrics=[pb.MetricColumn(name=name, rows=rows, values=values)
                                 for name, (rows, values) in columns.items()])
    return pb.WriteRequest(runs=[batch]).SerializeToString()


def pb_raw_twice():
    pb = ingest_pb.load()
    column = pb.MetricColumn(name="loss", values=[1.0])
    batch = pb.RunBatch(project="pb", run="pb_twice", steps=[1], times=[1767225600.0], metrics=[column, column])
    return pb.WriteRequest(runs=[batch]).SerializeToString()


# ---------------------------------------------------------------------------------------------------
# JSON lines: one bad line at a time

GOOD_METRICS = '"metrics":{"loss":0.5}'

# (label, line, substring expected in the error message)
BAD_LINES = [
    ("broken json", '{"run":"bad_a","step":1,' + GOOD_METRICS, ""),
    ("not json", "this is not json", ""),
    ("array", '[1,2,3]', ""),
    ("step as string", '{"run":"bad_b","step":"1",' + GOOD_METRICS + '}', "step"),
    ("metrics as list", '{"run":"bad_c","step":1,"metrics":[0.5]}', "metrics"),
    ("metrics as number", '{"run":"bad_c2","step":1,"metrics":0.5}', "metrics"),
    ("value as string", '{"run":"bad_d","step":1,"metrics":{"loss":"0.5"}}', "loss"),
    ("value null", '{"run":"bad_e","step":1,"metrics":{"loss":null}}', "loss"),
    ("value bool", '{"run":"bad_f","step":1,"metrics":{"loss":true}}', "loss"),
    ("value object", '{"run":"bad_f2","step":1,"metrics":{"loss":{"v":1}}}', "loss"),
    ("value nan lowercase", '{"run":"bad_f3","step":1,"metrics":{"loss":nan}}', ""),
    ("run as number", '{"run":12,"step":1,' + GOOD_METRICS + '}', "run"),
    ("run empty", '{"run":"","step":1,' + GOOD_METRICS + '}', "run"),
    ("run missing", '{"step":1,' + GOOD_METRICS + '}', "run"),
    ("step missing", '{"run":"bad_g",' + GOOD_METRICS + '}', "step"),
    ("negative step", '{"run":"bad_h","step":-1,' + GOOD_METRICS + '}', "step"),
    ("NaN step", '{"run":"bad_i","step":NaN,' + GOOD_METRICS + '}', "step"),
    ("Infinity step", '{"run":"bad_i2","step":Infinity,' + GOOD_METRICS + '}', "step"),
    ("fractional step", '{"run":"bad_j","step":1.5,' + GOOD_METRICS + '}', "step"),
    ("exponent step", '{"run":"bad_j2","step":1e3,' + GOOD_METRICS + '}', "step"),
    ("huge step", '{"run":"bad_k","step":99999999999999999999,' + GOOD_METRICS + '}', "step"),
    ("int64 max + 1 step", '{"run":"bad_k2","step":9223372036854775808,' + GOOD_METRICS + '}', "step"),
    ("negative time", '{"run":"bad_l","step":1,"time":-5,' + GOOD_METRICS + '}', "time"),
    ("NaN time", '{"run":"bad_m","step":1,"time":NaN,' + GOOD_METRICS + '}', "time"),
    ("time as string", '{"run":"bad_m2","step":1,"time":"now",' + GOOD_METRICS + '}', "time"),
    ("unknown field", '{"run":"bad_n","step":1,' + GOOD_METRICS + ',"colour":"red"}', "colour"),
    ("text after object", '{"run":"bad_o","step":1,' + GOOD_METRICS + '} {"x":1}', ""),
    ("control char escaped in run", '{"run":"bad\\u0001p","step":1,' + GOOD_METRICS + '}', "control"),
    ("control char escaped in metric", '{"run":"bad_q","step":1,"metrics":{"lo\\u001fss":1}}', "control"),
    ("raw control char in string", '{"run":"bad\x01r","step":1,' + GOOD_METRICS + '}', ""),
    ("tab escaped in project", '{"project":"a\\tb","run":"bad_s","step":1,' + GOOD_METRICS + '}', "control"),
    ("empty metric name", '{"run":"bad_t","step":1,"metrics":{"":1}}', "metric"),
    ("name too long", '{"run":"%s","step":1,%s}' % ("x" * 257, GOOD_METRICS), "run"),
    ("bad status", '{"run":"bad_u","status":"sleeping"}', "status"),
    ("config not object", '{"run":"bad_v","config":[1]}', "config"),
    ("config with NaN", '{"run":"bad_w","config":{"lr":NaN}}', "config"),
    ("tags not strings", '{"run":"bad_x","tags":[1,2]}', "tags"),
    ("lone surrogate escape", '{"run":"bad_\\ud800y","step":1,' + GOOD_METRICS + '}', ""),
    ("bad escape", '{"run":"bad_\\qz","step":1,' + GOOD_METRICS + '}', ""),
    ("number with leading zero", '{"run":"bad_z","step":01,' + GOOD_METRICS + '}', ""),
    ("plus sign number", '{"run":"bad_z2","step":1,"metrics":{"loss":+1}}', ""),
]


@pytest.mark.parametrize("label,line,keyword", BAD_LINES, ids=[b[0] for b in BAD_LINES])
def test_bad_line_is_rejected_with_reason(module_server, label, line, keyword):
    r = write_raw(module_server, line + "\n")
    assert r.status == 400, r
    body = r.json()
    assert body["lines_accepted"] == 0 and body["lines_rejected"] == 1, body
    assert body["points_accepted"] == 0, body
    assert len(body["errors"]) == 1 and body["errors"][0]["line"] == 1, body
    message = body["errors"][0]["error"]
    assert message, body
    assert keyword.lower() in message.lower(), (keyword, message)
    for run in re.findall(r'"run":"([^"\\]+)"', line):
        assert not run_exists(module_server, run), run


INVALID_UTF8 = [
    ("run", b'{"run":"bad\xffrun","step":1,"metrics":{"loss":1}}'),
    ("metric", b'{"run":"utf_ok","step":1,"metrics":{"lo\xc3ss":1}}'),
    ("project", b'{"project":"p\xe2\x82","run":"utf_ok2","step":1,"metrics":{"loss":1}}'),
    ("overlong", b'{"run":"bad\xc0\xafrun","step":1,"metrics":{"loss":1}}'),
    ("surrogate", b'{"run":"bad\xed\xa0\x80run","step":1,"metrics":{"loss":1}}'),
]


@pytest.mark.parametrize("what,line", INVALID_UTF8, ids=[u[0] for u in INVALID_UTF8])
def test_invalid_utf8_in_names_is_rejected(module_server, what, line):
    r = write_raw(module_server, line + b"\n")
    assert r.status == 400, r
    body = r.json()  # the reply itself must be valid JSON (and so valid UTF-8)
    assert body["lines_rejected"] == 1 and body["errors"][0]["line"] == 1, body
    assert "utf-8" in body["errors"][0]["error"].lower(), body
    assert not run_exists(module_server, "utf_ok") and not run_exists(module_server, "utf_ok2")


def test_valid_utf8_and_json_special_names_round_trip(module_server):
    name = 'räksmörgås-训练-🚀 "quoted" back\\slash'
    metrics = {"λ/loss": 0.25, 'q"uote': 1.0, "back\\slash": 2.0, "\u2028line-sep": 3.0, "a/b?c&d=e#f": 4.0}
    module_server.write_ok([{"project": "ünï", "run": name, "step": 1, "time": 1767225600, "metrics": metrics}])
    rows = module_server.export(name, project="ünï")
    assert rows == [{"project": "ünï", "run": name, "step": 1, "time": 1767225600, "metrics": metrics}]
    listed = module_server.get_json("/api/v1/metrics", {"project": "ünï", "run": name})
    assert sorted(m["name"] for m in listed) == sorted(metrics)
    body = module_server.get_json("/api/v1/series", {"project": "ünï", "run": name, "metric": 'q"uote'})
    assert body["metric"] == 'q"uote' and body["series"][0]["run"] == name
    assert body["series"][0]["points"] == [[1, 1767225600, 1.0]]


def test_empty_and_blank_bodies(module_server):
    for body in ("", "\n", "\n\n  \n\t\n", "\r\n"):
        r = write_raw(module_server, body)
        assert r.status == 200, (body, r)
        result = r.json()
        assert result["lines_accepted"] == 0 and result["lines_rejected"] == 0 and result["errors"] == [], result


def test_mix_of_good_and_bad_lines(module_server):
    lines = [
        '{"run":"mix","step":1,"time":1767225600,"metrics":{"loss":1.0}}',    # 1 good
        '{"run":"mix","step":"2","metrics":{"loss":2.0}}',                  # 2 bad
        '',                                                                  # 3 blank
        '{"run":"mix","step":3,"time":1767225601,"metrics":{"loss":3.0,"acc":0.5}}',  # 4 good
        '{"run":"mix","step":4,"metrics":{"loss":null}}',                   # 5 bad
        'garbage',                                                           # 6 bad
        '{"run":"mix","step":5,"time":1767225602,"metrics":{"loss":Infinity}}',  # 7 good
        '{"run":"mix","step":6,"metrics":{"loss":1},"x":1}',                # 8 bad
    ]
    r = write_raw(module_server, "\n".join(lines))  # no trailing newline on the last line
    assert r.status == 400, r
    body = r.json()
    assert body["lines_accepted"] == 3 and body["lines_rejected"] == 4, body
    assert body["points_accepted"] == 4, body
    assert [e["line"] for e in body["errors"]] == [2, 5, 6, 8], body
    rows = module_server.export("mix")
    got = {(row["step"], m): v for row in rows for m, v in row["metrics"].items()}
    assert got == {(1, "loss"): 1.0, (3, "loss"): 3.0, (3, "acc"): 0.5, (5, "loss"): float("inf")}, rows


def test_metric_named_twice_in_one_line(module_server):
    """{"metrics":{"a":1,"a":2}} is one point at one step. Either the line is refused (as the protobuf
    path refuses a metric named twice in one batch), or one value is stored; it must not count two
    points, nor start a second timeline with a superseded point that nobody ever wrote separately.

    Found by this suite: the server stores both, the second as a rewind: points_accepted 2,
    timelines 2, and the first value listed by /series/superseded."""
    r = write_raw(module_server, '{"run":"dupkey","step":1,"time":1767225600,"metrics":{"a":1,"a":2}}\n')
    if r.status == 400:
        body = r.json()
        assert body["errors"][0]["line"] == 1 and "'a'" in body["errors"][0]["error"], body
        assert not run_exists(module_server, "dupkey")
        return
    assert r.status == 200, r
    assert r.json()["points_accepted"] == 1, r.json()
    (metric,) = module_server.get_json("/api/v1/metrics", {"run": "dupkey"})
    assert metric["count"] == 1 and metric["timelines"] == 1, metric
    superseded = module_server.get_json("/api/v1/series/superseded", {"run": "dupkey", "metric": "a"})
    assert superseded["points"] == [], superseded


def test_many_bad_lines_are_counted_and_reports_are_capped(module_server):
    body = "\n".join(['{"run":"many","step":%d,"metrics":{"loss":"x"}}' % i for i in range(250)])
    r = write_raw(module_server, body + '\n{"run":"many","step":999,"metrics":{"loss":1}}\n')
    assert r.status == 400
    result = r.json()
    assert result["lines_rejected"] == 250 and result["lines_accepted"] == 1, {k: result[k] for k in result if k != "errors"}
    assert 0 < len(result["errors"]) <= 250
    assert len(result["errors"]) + result.get("errors_omitted", 0) == 250, len(result["errors"])
    assert [e["line"] for e in result["errors"]] == list(range(1, len(result["errors"]) + 1))


def test_step_limits(module_server):
    top = 9223372036854775807
    module_server.write_ok([{"run": "steps", "step": 0, "time": 1767225600, "metrics": {"v": 1.0}},
                            {"run": "steps", "step": top, "time": 1767225601, "metrics": {"v": 2.0}}])
    rows = module_server.export("steps")
    assert [(row["step"], row["metrics"]["v"]) for row in rows] == [(0, 1.0), (top, 2.0)], rows
    body = module_server.get_json("/api/v1/series", {"run": "steps", "metric": "v"})
    assert [p[0] for p in body["series"][0]["points"]] == [0, top], body


def test_metric_name_flood_in_one_line(module_server):
    """One line naming 1,000,000 metrics (~11 MB): rejected with the per-run limit, nothing created."""
    names = ",".join('"m%d":1' % i for i in range(1_000_000))
    line = '{"run":"flood","step":1,"metrics":{%s}}\n' % names
    assert len(line) > 10_000_000
    series_before = module_server.metric_value("trainwatch_series")
    r = write_raw(module_server, line)
    assert r.status == 400, r
    body = r.json()
    assert body["lines_rejected"] == 1 and body["errors"][0]["line"] == 1, body
    assert "10000" in body["errors"][0]["error"] and "metrics" in body["errors"][0]["error"], body
    assert not run_exists(module_server, "flood")
    assert module_server.metric_value("trainwatch_series") == series_before  # not one series was created
    assert module_server.get("/healthz").status == 200


# ---------------------------------------------------------------------------------------------------
# Limits that need their own server


@pytest.fixture(scope="module")
def small_server(tmp_path_factory, request):
    from conftest import Server
    s = Server(tmp_path_factory.mktemp("small"), extra_args=["--max-body-bytes", "65536",
                                                              "--max-metrics-per-run", "100"])
    request.module._SHARED_SERVERS = getattr(request.module, "_SHARED_SERVERS", []) + [s]
    s.start()
    yield s
    s.stop()


def test_body_over_the_limit_is_413(small_server):
    line = '{"run":"big","step":%d,"metrics":{"loss":0.5}}\n'
    body = "".join(line % i for i in range(3000)).encode()
    assert len(body) > 65536
    # Declared size over the limit: refused as soon as the headers are read.
    head = ("POST /api/v1/write HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n"
            "Content-Length: %d\r\n\r\n" % len(body)).encode()
    response = raw_exchange(small_server.port, head)
    assert status_line(response).startswith(b"HTTP/1.1 413"), response[:300]
    assert b"65536" in response, response
    # The whole body sent anyway (as a client that does not wait would).
    response = raw_exchange(small_server.port, head + body)
    assert status_line(response).startswith(b"HTTP/1.1 413"), response[:300]
    # Chunked, so the size is only known while reading.
    chunked = head.replace(b"Content-Length: %d" % len(body), b"Transfer-Encoding: chunked")
    for i in range(0, len(body), 8192):
        piece = body[i:i + 8192]
        chunked += b"%x\r\n%s\r\n" % (len(piece), piece)
    chunked += b"0\r\n\r\n"
    response = raw_exchange(small_server.port, chunked)
    assert status_line(response).startswith(b"HTTP/1.1 413"), response[:300]
    assert not run_exists(small_server, "big")
    # Just under the limit is fine.
    ok = "".join(line % i for i in range(1200)).encode()
    assert len(ok) < 65536
    r = write_raw(small_server, ok)
    assert r.status == 200 and r.json()["points_accepted"] == 1200, r


def test_metrics_per_run_limit(small_server):
    # One line over the limit.
    line = {"run": "wide", "step": 1, "metrics": {"m%d" % i: i for i in range(150)}}
    r = small_server.write([line])
    assert r.status == 400, r
    assert "100" in r.json()["errors"][0]["error"], r
    assert not run_exists(small_server, "wide")
    # The limit across writes: 90 metrics, then 20 more: 10 are created, 10 refused by name.
    small_server.write_ok([{"run": "grow", "step": 1, "metrics": {"a%d" % i: i for i in range(90)}}])
    r = small_server.write([{"run": "grow", "step": 2, "metrics": {"b%d" % i: i for i in range(20)}}])
    assert r.status == 400, r
    body = r.json()
    assert body["points_accepted"] == 10 and body["points_rejected"] == 10, body
    assert all("maximum of 100 metrics" in e["error"] and e["line"] == 1 for e in body["errors"]), body
    listed = small_server.get_json("/api/v1/metrics", {"run": "grow"})
    assert len(listed) == 100, len(listed)
    # Existing metrics still take points.
    small_server.write_ok([{"run": "grow", "step": 3, "metrics": {"a0": 1.0, "b0": 2.0}}])


# ---------------------------------------------------------------------------------------------------
# Protobuf bodies

PB = {"Content-Type": "application/x-protobuf"}


def test_protobuf_write_and_bad_protobuf_bodies(module_server):
    good = pb_write_request("pbrun", [1, 2, 3], [1767225600.0, 1767225601.0, 1767225602.0],
                            {"loss": [0.5, float("nan"), 0.25], "acc": [0.1, 0.2, 0.3]})
    bad_bodies = [("truncated at %d" % n, good[:n]) for n in (1, 2, 5, len(good) // 2, len(good) - 1)]
    bad_bodies += [
        ("varint overflow", b"\xff" * 11),
        ("length beyond the body", b"\x1a\x64abc"),
        ("end group without start", b"\x1c"),
        ("field number zero", b"\x00\x01"),
        ("text", b"hello, this is not a protobuf message at all"),
    ]
    for label, body in bad_bodies:
        r = module_server.post("/api/v1/write", body, headers=PB)
        assert r.status == 400, (label, r)
        assert "protobuf" in r.json()["error"].lower(), (label, r)
        assert not run_exists(module_server, "pbrun", project="pb"), label
    r = module_server.post("/api/v1/write", good, headers=PB)
    assert r.status == 200, r
    assert r.json()["points_accepted"] == 6, r
    rows = module_server.export("pbrun", project="pb")
    assert [row["step"] for row in rows] == [1, 2, 3]
    assert rows[0]["metrics"] == {"loss": 0.5, "acc": 0.1}
    # Sparse columns: values only at the rows named.
    r = module_server.post("/api/v1/write", pb_sparse("pbsparse", [10, 11, 12], {"a": ([0, 2], [1.0, 3.0]),
                                                                                 "b": ([1], [2.0])}), headers=PB)
    assert r.status == 200 and r.json()["points_accepted"] == 3, r
    rows = module_server.export("pbsparse", project="pb")
    assert [(row["step"], row["metrics"]) for row in rows] == [(10, {"a": 1.0}), (11, {"b": 2.0}), (12, {"a": 3.0})]


def test_protobuf_semantic_errors(module_server):
    cases = [
        ("negative step", pb_write_request("pb_neg", [-1], [1767225600.0], {"loss": [1.0]}), "negative"),
        ("times mismatch", pb_write_request("pb_times", [1, 2], [1767225600.0], {"loss": [1.0, 2.0]}), "times"),
        ("NaN time", pb_write_request("pb_nantime", [1], [float("nan")], {"loss": [1.0]}), "time"),
        ("dense column too short", pb_write_request("pb_dense", [1, 2], [1.0, 2.0], {"loss": [1.0]}), "values"),
        ("bad run name", pb_write_request("bad\x01", [1], [1.0], {"loss": [1.0]}), "control"),
        ("missing run", pb_write_request("", [1], [1.0], {"loss": [1.0]}), "run"),
        ("metric twice", pb_raw_twice(), "twice"),
        ("row out of range", pb_sparse("pb_rows", [1, 2], {"loss": ([0, 5], [1.0, 2.0])}), "out of range"),
        ("rows and values differ", pb_sparse("pb_rows2", [1, 2], {"loss": ([0, 1], [1.0])}), "differ"),
    ]
    for label, body, keyword in cases:
        r = module_server.post("/api/v1/write", body, headers=PB)
        assert r.status == 400, (label, r)
        errors = r.json()["errors"]
        assert errors and keyword in errors[0]["error"], (label, errors)
    for run in ("pb_neg", "pb_times", "pb_nantime", "pb_dense", "pb_twice", "pb_rows", "pb_rows2"):
        assert not run_exists(module_server, run, project="pb")


# ---------------------------------------------------------------------------------------------------
# HTTP level


def test_unknown_endpoint_and_wrong_method(module_server):
    for path in ("/api/v1/nope", "/api/v3/write", "/api/v1/write/extra"):  # "/" is the dashboard
        r = module_server.get(path)
        assert r.status == 404, (path, r)
        assert "error" in r.json()
    for method, path in (("GET", "/api/v1/write"), ("POST", "/healthz"), ("DELETE", "/api/v1/runs"),
                         ("PUT", "/api/v1/write"), ("POST", "/api/v1/export"), ("GET", "/api/v2/write")):
        r = http(method, module_server.url + path, body=b"" if method != "GET" else None)
        assert r.status == 405, (method, path, r)
        assert "error" in r.json()


@pytest.mark.parametrize("garbage", [
    b"\x00\x01\x02\x03 garbage \xff\xfe\r\n\r\n",
    b"GET\r\n\r\n",
    b"GET / HTTP/9.9\r\n\r\n",
    b"POST /api/v1/write HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n",
    b"POST /api/v1/write HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello",
    b"POST /api/v1/write HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    b"GET /healthz HTTP/1.1\r\nBad Header Without Colon\r\n\r\n",
    b"GET /healthz HTTP/1.1\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n",
], ids=["binary", "no-version", "bad-version", "bad-length", "two-lengths", "bad-chunk", "bad-header", "huge-header"])
def test_http_garbage_on_a_raw_socket(module_server, garbage):
    response = raw_exchange(module_server.port, garbage, shut_write=True)
    # A 4xx answer with a JSON reason: never a hang, a 2xx or a crash.
    assert response, "connection closed without an answer"
    assert status_line(response).split(b" ")[1][:1] == b"4", response[:300]
    assert b'{"error":' in response, response[:300]
    assert module_server.alive()
    assert module_server.get("/healthz").status == 200


def test_pipelined_requests_are_answered_in_order(module_server):
    requests = (b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                b"GET /api/v1/nope HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                b"POST /api/v1/write HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\nContent-Length: 49\r\n\r\n"
                b'{"run":"piped","step":1,"metrics":{"loss":0.5}}\n\n'
                b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    response = raw_exchange(module_server.port, requests)
    statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", response)
    assert statuses == [b"200", b"404", b"200", b"200"], response
    assert run_exists(module_server, "piped")


def test_expect_100_continue_gets_the_go_ahead_at_once(module_server):
    # curl sends `Expect: 100-continue` for bodies over 1 MiB and waits (1 s) for the go-ahead.
    body = b'{"run":"expect","step":1,"metrics":{"loss":0.5}}\n'
    with socket.create_connection(("127.0.0.1", module_server.port), timeout=5) as s:
        s.sendall(b"POST /api/v1/write HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\nExpect: 100-continue\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body))
        s.settimeout(10)  # without the go-ahead nothing comes at all: the server waits for the body
        interim = s.recv(1024)
        assert interim.startswith(b"HTTP/1.1 100 Continue\r\n"), interim
        s.settimeout(5)
        s.sendall(body)
        final = s.recv(4096)
        assert final.startswith(b"HTTP/1.1 200 "), final
    assert run_exists(module_server, "expect")


def test_slow_clients_do_not_block_others(module_server):
    idle = []
    try:
        for i in range(20):
            s = socket.create_connection(("127.0.0.1", module_server.port), timeout=5)
            if i % 3 == 0:
                s.sendall(b"POST /api/v1/write HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\nContent-Length: 1000\r\n\r\n{\"run\":\"slow\"")
            elif i % 3 == 1:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHo")
            idle.append(s)  # the third kind sends nothing at all
        for i in range(20):
            r = module_server.write([{"run": "fast", "step": i, "metrics": {"loss": i / 10}}], timeout=20)
            assert r.status == 200, r
            assert module_server.get("/healthz", timeout=20).status == 200
        # Every slow connection is still open and unanswered: the fast requests were served while all
        # of them were pending, not after the server's 60 s read timeout closed them.
        for s in idle:
            s.setblocking(False)
            with pytest.raises(BlockingIOError):
                s.recv(1)
            s.settimeout(5)
        # The half-sent request is still pending, not answered with something else and not stored.
        assert not run_exists(module_server, "slow")
        # Completing a half-sent request late still works.
        s = idle[1]
        s.sendall(b"st: 127.0.0.1\r\n\r\n")
        assert status_line(s.recv(4096)).startswith(b"HTTP/1.1 200")
    finally:
        for s in idle:
            s.close()
    assert len(module_server.export("fast")) == 20


# ---------------------------------------------------------------------------------------------------
# Start-up refusals


def run_to_exit(args, timeout=20):
    p = subprocess.run([BIN, "serve"] + args, capture_output=True, timeout=timeout)
    return p.returncode, (p.stdout + p.stderr).decode("utf-8", "replace")


def test_second_server_on_the_same_data_dir_refuses(module_server):
    rc, out = run_to_exit(["--data-dir", module_server.data_dir, "--listen", "127.0.0.1:0",
                           "--grpc-listen", "127.0.0.1:0"])
    assert rc != 0, out
    assert "in use" in out or "lock" in out.lower(), out
    assert module_server.get("/healthz").status == 200
    module_server.write_ok([{"run": "after_lock", "step": 1, "metrics": {"loss": 1}}])


@pytest.mark.parametrize("which", ["--listen", "--grpc-listen"])
def test_server_on_a_taken_port_refuses(tmp_path, which):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        port = taken.getsockname()[1]
        ports = {"--listen": 0, "--grpc-listen": 0}
        ports[which] = port
        rc, out = run_to_exit(["--data-dir", str(tmp_path / "d"), "--listen", "127.0.0.1:%d" % ports["--listen"],
                               "--grpc-listen", "127.0.0.1:%d" % ports["--grpc-listen"]])
    finally:
        taken.close()
    assert rc != 0, out
    assert str(port) in out and ("in use" in out or "cannot listen" in out), out


# ---------------------------------------------------------------------------------------------------
# Last: after everything above, the shared server is still fine.


def test_zz_server_still_healthy_after_the_abuse(module_server):
    assert module_server.alive()
    assert module_server.get("/healthz").status == 200
    module_server.write_ok([{"run": "survivor", "step": 7, "time": 1767225600.5, "metrics": {"loss": 0.125}}])
    assert module_server.export("survivor") == [
        {"project": "default", "run": "survivor", "step": 7, "time": 1767225600.5, "metrics": {"loss": 0.125}}]
    assert module_server.terminate() == 0
