"""InfluxDB's write endpoints against a real server, with real clients nobody here wrote: Debian's
`python3-influxdb` (InfluxDBClient: ping, write_points as JSON points and as line protocol, batches,
precisions, Basic auth) and `curl` (gzip bodies, /api/v2/write with a Token). The points are read
back through /api/v1/export, mapped as docs/influx.md says."""
import gzip
import subprocess

import pytest
from influxdb import InfluxDBClient
from influxdb.exceptions import InfluxDBClientError

from conftest import http, loads

T0_NS = 1700000000000000000


def rows(server, run, project="training"):
    """{step: {metric: value}} of a run, from /api/v1/export."""
    out = {}
    for line in server.export(run, project=project):
        out.setdefault(line["step"], {}).update(line["metrics"])
    return out


def client(server, **kw):
    return InfluxDBClient(host="127.0.0.1", port=server.port, database="training", timeout=30, **kw)


def test_ping_answers_as_influxdb(server):
    r = http("GET", server.url + "/ping")
    assert r.status == 204
    assert r.headers.get("X-Influxdb-Version", "").startswith("1.8")
    assert client(server).ping().startswith("1.8")


def test_the_python_client_writes_the_grafana_layout_and_telegraf_measurements(server):
    c = client(server)
    points = [{"measurement": "training_metrics", "tags": {"metric_name": name, "run": "r1"},
               "fields": {"value": value, "step": step}, "time": 1700000000000 + step}
              for step in range(50) for name, value in (("loss", 1.0 / (step + 1)), ("accuracy", step / 50))]
    assert c.write_points(points, time_precision="ms", batch_size=40)
    c.write_points(["nvidia_smi,host=gpu1,index=0,name=A100 utilization_gpu=87i,pstate=\"P0\" 1700000000",
                    "nvidia_smi,host=gpu1,index=1,name=A100 utilization_gpu=12i 1700000000",
                    "cpu,cpu=cpu-total,host=gpu1 usage_idle=93.5 1700000001"],
                   time_precision="s", protocol="line")

    got = rows(server, "r1")
    assert sorted(got) == list(range(50))
    for step in range(50):
        assert got[step] == {"loss": 1.0 / (step + 1), "accuracy": step / 50}
    host = rows(server, "host:gpu1")
    assert host == {
        1700000000000: {"nvidia_smi/utilization_gpu{index=0,name=A100}": 87.0,
                        "nvidia_smi/utilization_gpu{index=1,name=A100}": 12.0},
        1700000001000: {"cpu/usage_idle{cpu=cpu-total}": 93.5},
    }
    run = server.get_json("/api/v1/run", {"project": "training", "run": "host:gpu1"})
    assert run["host"] == "gpu1"


def test_a_bad_line_is_a_partial_write_that_keeps_the_others(server):
    body = ("training_metrics,metric_name=loss,run=r1 value=0.5,step=1i %d\n"
            "bad f=x\n"
            "training_metrics,metric_name=loss,run=r1 value=0.25,step=2i %d\n" % (T0_NS, T0_NS + 1))
    r = http("POST", server.url + "/write?db=training", body, headers={"Content-Type": "text/plain"})
    assert r.status == 400
    assert r.json() == {"error": "partial write: unable to parse 'bad f=x': invalid number dropped=1"}
    assert rows(server, "r1") == {1: {"loss": 0.5}, 2: {"loss": 0.25}}

    with pytest.raises(InfluxDBClientError) as refused:
        client(server).write_points(["m,run=x f="], protocol="line")
    assert refused.value.code == 400
    assert "missing field value" in refused.value.content


def test_database_precision_and_type_errors(server):
    r = http("POST", server.url + "/write", "m,run=a v=1", headers={"Content-Type": "text/plain"})
    assert (r.status, r.json()) == (400, {"error": "database is required"})
    r = http("POST", server.url + "/write?db=d&precision=d", "m,run=a v=1", headers={"Content-Type": "text/plain"})
    assert r.status == 400 and "invalid precision 'd'" in r.json()["error"]
    r = http("POST", server.url + "/api/v2/write?bucket=d&precision=h", "m,run=a v=1",
             headers={"Content-Type": "text/plain"})
    assert r.status == 400
    assert r.json()["code"] == "invalid" and "one of ns, us, ms, s" in r.json()["message"]
    r = http("POST", server.url + "/write?db=d", "m,run=a v=1,step=-3i", headers={"Content-Type": "text/plain"})
    assert r.status == 400 and "field 'step' must be a whole number >= 0" in r.json()["error"]


def test_curl_sends_gzip_to_v1_and_v2(server, tmp_path):
    body = "".join("training_metrics,metric_name=lr,run=g value=%g,step=%di %d\n" % (0.1 * i, i, 1700000000 + i)
                   for i in range(1000))
    path = tmp_path / "body.gz"
    path.write_bytes(gzip.compress(body.encode()))
    for url in ("/write?db=training&precision=s", "/api/v2/write?bucket=training&org=o&precision=s"):
        out = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-XPOST",
                              server.url + url, "-H", "Content-Encoding: gzip", "--data-binary", "@%s" % path],
                             stdout=subprocess.PIPE, universal_newlines=True, check=True, timeout=60)
        assert out.stdout == "204", url
    got = rows(server, "g")
    assert len(got) == 1000
    assert got[999] == {"lr": pytest.approx(99.9)}
    r = http("POST", server.url + "/write?db=training", b"\x1f\x8b not gzip",
             headers={"Content-Type": "text/plain", "Content-Encoding": "gzip"})
    assert r.status == 400 and "not valid gzip" in r.json()["error"]


def test_keys_as_influxdb_clients_send_them(server_factory):
    server = server_factory("--api-key", "s3cret")
    line = "training_metrics,metric_name=loss,run=k value=1,step=1i"
    headers = {"Content-Type": "text/plain"}
    assert http("POST", server.url + "/write?db=training", line, headers=headers).status == 401
    r = http("POST", server.url + "/api/v2/write?bucket=training", line,
             headers=dict(headers, Authorization="Token s3cret"))
    assert r.status == 204
    r = http("POST", server.url + "/api/v2/write?bucket=training", line,
             headers=dict(headers, Authorization="Token wrong"))
    assert r.status == 401
    # InfluxDBClient sends its user name and password as Basic auth: the password is the key.
    assert client(server, username="anyone", password="s3cret").write_points(
        [{"measurement": "training_metrics", "tags": {"metric_name": "loss", "run": "k"},
          "fields": {"value": 2.0, "step": 2}}])
    with pytest.raises(InfluxDBClientError) as refused:
        client(server, username="anyone", password="nope").write_points(["m,run=x v=1"], protocol="line")
    assert refused.value.code == 401
    assert http("GET", server.url + "/ping").status == 204, "/ping needs no key, as in InfluxDB"
    headers = {"Authorization": "Bearer s3cret"}
    assert rows_with(server, "k", headers) == {1: {"loss": 1.0}, 2: {"loss": 2.0}}


def rows_with(server, run, headers):
    r = http("GET", server.url + "/api/v1/export?project=training&run=" + run, headers=headers)
    assert r.status == 200, r
    out = {}
    for line in r.text.split("\n"):
        if line.strip():
            rec = loads(line)
            out.setdefault(rec["step"], {}).update(rec["metrics"])
    return out
