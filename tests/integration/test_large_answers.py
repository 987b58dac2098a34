"""Answers too large to build at once, against a real server: raw series are capped per answer and
paged with next_from (--max-raw-points, limit=), and exports are streamed in chunks that add up to
exactly the run."""
import gzip
import http.client
import json

from conftest import loads

T0 = 1767225600.0


def write_steps(server, run, steps, metrics=("loss",), project="default", chunk=5000):
    for start in range(0, len(steps), chunk):
        lines = [{"project": project, "run": run, "step": s, "time": T0 + s,
                  "metrics": {m: (s % 97) / 7 + i for i, m in enumerate(metrics)}}
                 for s in steps[start:start + chunk]]
        server.write_ok(lines)


def raw(server, run, **params):
    if isinstance(run, str):
        run = [run]
    return server.get_json("/api/v1/series", [("metric", "loss")] + [("run", r) for r in run] +
                           [(k, str(v)) for k, v in params.items()])


def test_raw_answers_are_capped_and_paged_with_next_from(server_factory):
    server = server_factory("--max-raw-points", "1000")
    steps = list(range(0, 5000, 2))  # 2,500 points
    write_steps(server, "big", steps)
    seen, params, pages = [], {}, 0
    while True:
        series = raw(server, "big", **params)["series"][0]
        pages += 1
        assert len(series["points"]) <= 1000
        seen += [p[0] for p in series["points"]]
        if "next_from" not in series:
            break
        assert series["next_from"] > seen[-1]
        params = {"from": series["next_from"]}
    assert seen == steps and pages == 3
    # A smaller page on request, within a range; a limit over the cap is refused with the flag named.
    series = raw(server, "big", limit=10, **{"from": 101, "to": 4000})["series"][0]
    assert [p[0] for p in series["points"]] == list(range(102, 122, 2)) and series["next_from"] == 122
    r = server.get("/api/v1/series", {"run": "big", "metric": "loss", "limit": "1001"})
    assert r.status == 400 and "--max-raw-points" in r.json()["error"], r


def test_the_cap_is_shared_by_the_runs_of_one_answer(server_factory):
    server = server_factory("--max-raw-points", "1000")
    write_steps(server, "a", list(range(800)))
    write_steps(server, "b", list(range(100, 900)))
    a, b = raw(server, ["a", "b"])["series"]
    assert len(a["points"]) == 800 and "next_from" not in a
    assert [p[0] for p in b["points"]] == list(range(100, 300)) and b["next_from"] == 300
    a, b = raw(server, ["a", "b"], **{"from": 300})["series"]
    assert len(a["points"]) == 500 and len(b["points"]) == 500 and b["next_from"] == 800
    # With the budget spent on the first run, the second says where it starts.
    a, b = raw(server, ["a", "b"], limit=5)["series"]
    assert len(a["points"]) == 5 and a["next_from"] == 5
    assert b["points"] == [] and b["next_from"] == 100


def test_raw_answers_over_wall_time_say_they_are_truncated(server_factory):
    server = server_factory("--max-raw-points", "100")
    write_steps(server, "t", list(range(300)))
    series = raw(server, "t", x="time")["series"][0]
    assert len(series["points"]) == 100 and series["truncated"] is True and "next_from" not in series


def test_export_is_streamed_in_chunks_and_holds_every_point_exactly(server):
    steps = list(range(40_000))
    metrics = ("loss", "acc", "lr")
    write_steps(server, "exp", steps, metrics=metrics)  # 120,000 points: several pieces
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    conn.request("GET", "/api/v1/export?run=exp")
    r = conn.getresponse()
    assert r.status == 200
    assert r.getheader("Transfer-Encoding") == "chunked" and r.getheader("Content-Length") is None
    lines = [loads(line) for line in r.read().decode().split("\n") if line]
    conn.close()
    assert [l["step"] for l in lines] == steps
    for l in lines[::997]:
        s = l["step"]
        assert l["time"] == T0 + s
        assert l["metrics"] == {m: (s % 97) / 7 + i for i, m in enumerate(metrics)}
    # The connection's keep-alive survives a streamed answer: a second request on it works.
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    for _ in range(2):
        conn.request("GET", "/api/v1/export?run=exp")
        r = conn.getresponse()
        assert r.status == 200 and len(r.read().split(b"\n")) == len(steps) + 1
    conn.close()


def test_export_of_an_unknown_run_is_a_plain_404(server):
    r = server.get("/api/v1/export", {"run": "nope"})
    assert r.status == 404 and "error" in json.loads(r.body)


def test_large_answers_are_gzip_compressed_for_a_client_that_accepts_gzip(server):
    # A browser, Grafana and promtool send Accept-Encoding: gzip; the answer is the same JSON, smaller.
    write_steps(server, "big", list(range(20000)))
    params = {"run": "big", "metric": "loss"}
    plain = server.get("/api/v1/series", params)
    assert plain.status == 200 and "Content-Encoding" not in plain.headers, plain.headers
    packed = server.get("/api/v1/series", params, headers={"Accept-Encoding": "br, gzip;q=0.8"})
    assert packed.status == 200, packed
    assert packed.headers.get("Content-Encoding") == "gzip", packed.headers
    assert packed.headers.get("Vary") == "Accept-Encoding", packed.headers
    assert len(packed.body) * 3 < len(plain.body), (len(packed.body), len(plain.body))
    assert gzip.decompress(packed.body) == plain.body
    # Refused by q=0, and small answers are sent as they are.
    assert "Content-Encoding" not in server.get("/api/v1/series", params,
                                                headers={"Accept-Encoding": "gzip;q=0"}).headers
    small = server.get("/api/v1/runs", headers={"Accept-Encoding": "gzip"})
    assert small.status == 200 and "Content-Encoding" not in small.headers, small.headers
