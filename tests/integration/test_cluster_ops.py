"""`make cluster` (issue 15, docs/cluster.md): scripts/cluster.sh starts three Debian nats-server
nodes (JetStream R3) and three trainwatch nodes on 127.0.0.1 in the background, and `down` stops
them all. Here with a temporary data directory and port 0 everywhere (CLUSTER_PORT=0,
CLUSTER_NATS_PORT=0): the script reports the ports it got in <dir>/cluster.env.

- up: the three nodes answer, /api/v1/info's "cluster" object on each lists the three members and
  the same owner for every partition (each node owning a share, their shares the whole), and
  /metrics says trainwatch_cluster_members 3; a write through one node is read through every node,
  whose consumer lag comes back to 0;
- down: every process the script started is gone, and none runs on the data directory.
"""
import json
import os
import subprocess

import jsonschema
import pytest

from conftest import BIN, REPO, Server
from harness import wait_until
from harness.nats_cluster import nats_available

SCRIPT = os.path.join(REPO, "scripts", "cluster.sh")
PARTITIONS = 8
MEMBERS = ["tw0", "tw1", "tw2"]
pytestmark = pytest.mark.skipif(not nats_available(),
                                reason="nats-server is missing (scripts/install-deps.sh installs it)")


class Node:
    """A trainwatch node the script started, reached by its URL (Server's request helpers)."""
    ssl_context = None
    get = Server.get
    post = Server.post
    write_ok = Server.write_ok
    write = Server.write
    get_json = Server.get_json
    metric_value = Server.metric_value

    def __init__(self, url):
        self.url = url


def script(command, env, timeout):
    return subprocess.run([SCRIPT, command], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


def read_env(path):
    with open(path) as f:
        return dict(line.strip().split("=", 1) for line in f if "=" in line)


def started_pids(pid_dir):
    """name -> (pid, start time) of every pid file the script wrote."""
    out = {}
    for name in os.listdir(pid_dir):
        with open(os.path.join(pid_dir, name)) as f:
            pid, start = f.read().split()
        out[name] = (int(pid), start)
    return out


def runs_as(pid, start):
    """Whether process `pid` runs and is the one started at `start` (not a reused pid)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[19] == start


def processes_naming(text):
    """Pids of the processes whose command line holds `text`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if text in cmdline:
            found.append((int(entry), cmdline))
    return found


def cluster_views(nodes):
    return [n.get_json("/api/v1/info")["cluster"] for n in nodes]


def settled(nodes):
    """The views once every node sees three members and every partition owned, all alike."""
    views = cluster_views(nodes)
    owners = [v["owners"] for v in views]
    if any(v["members"] != MEMBERS for v in views) or any(None in o for o in owners):
        return None
    if any(o != owners[0] for o in owners):
        return None
    for v in views:  # each node's own partitions are the ones the shared table gives it
        if v["owned_partitions"] != [p for p, o in enumerate(owners[0]) if o == v["node"]]:
            return None
    return views


def test_cluster_script_starts_three_nodes_that_agree_and_down_stops_them_all(tmp_path):
    assert os.access(BIN, os.X_OK), "no trainwatch binary at %s (set TRAINWATCH_BIN)" % BIN
    data = tmp_path / "cluster-data"
    env = dict(os.environ, CLUSTER_DIR=str(data), CLUSTER_PORT="0", CLUSTER_NATS_PORT="0", TRAINWATCH_BIN=BIN,
               DEMO="0", PARTITIONS=str(PARTITIONS), LEASE="3s")
    pids = {}
    try:
        up = script("up", env, timeout=600)
        assert up.returncode == 0, up.stdout + up.stderr
        pids = started_pids(data / "pids")
        assert sorted(pids) == ["nats-n0.pid", "nats-n1.pid", "nats-n2.pid", "tw0.pid", "tw1.pid", "tw2.pid"], pids
        ports = read_env(data / "cluster.env")
        urls = ports["TW_URLS"].split(",")
        assert len(urls) == 3 and len(ports["NATS_URLS"].split(",")) == 3, ports
        for url in urls:
            assert url in up.stdout, "the URLs are printed: " + up.stdout
        nodes = [Node(u) for u in urls]

        views = wait_until(lambda: settled(nodes), "the three nodes to agree on members and owners", timeout=90)
        assert [v["node"] for v in views] == MEMBERS
        assert all(v["partitions"] == PARTITIONS and v["nats_connected"] for v in views), views
        assert all(v["owned_partitions"] for v in views), "each node owns a share: %s" % views
        assert sorted(p for v in views for p in v["owned_partitions"]) == list(range(PARTITIONS))
        with open(os.path.join(REPO, "schema", "api.schema.json")) as f:
            schema = json.load(f)
        info = nodes[1].get_json("/api/v1/info")
        jsonschema.Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/ServerInfo"}).validate(info)
        for n in nodes:
            assert n.metric_value("trainwatch_cluster_members") == 3

        # A write through one node, read through each; every node applies the stream to its end.
        lines = [{"project": "ops", "run": "r", "step": s, "metrics": {"loss": 1.0 / (s + 1)}} for s in range(20)]
        assert nodes[0].write_ok(lines)["points_accepted"] == 20
        for n in nodes:
            wait_until(lambda: n.get("/api/v1/series", {"project": "ops", "run": "r", "metric": "loss"}).status == 200
                       and len(n.get_json("/api/v1/series", {"project": "ops", "run": "r", "metric": "loss"})
                               ["series"][0]["points"]) == 20, "%s to apply the write" % n.url)
        wait_until(lambda: all(v["stream_last_sequence"] >= 1 and v["consumer_lag"] == 0 for v in cluster_views(nodes)),
                   "every node's consumer lag to reach 0")
        leaders = {v["stream_leader"] for v in cluster_views(nodes)}
        assert len(leaders) == 1 and leaders <= {"n0", "n1", "n2"}, leaders
    finally:
        down = script("down", env, timeout=300)
    assert down.returncode == 0, down.stdout + down.stderr
    alive = {name: pid for name, (pid, start) in pids.items() if runs_as(pid, start)}
    assert not alive, "still running after down: %s" % alive
    assert not processes_naming(str(data)), processes_naming(str(data))
    assert not os.listdir(data / "pids"), "down removes the pid files"
