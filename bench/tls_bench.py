#!/usr/bin/env python3
"""What TLS costs: the same server, plaintext and with --tls-cert/--tls-key, side by side.

Per point: gRPC ingest (ingest_bench, 4 streams, 1,000-row batches) into a fresh server of each kind;
points/s, server CPU-s per million points, and the difference per point.
Per request: small GET answers (/api/v1/series of one 200-point series) from one client thread,
on one keep-alive connection and on a new connection per request (a full TLS handshake each);
microseconds per request and the difference. The client is Python's http.client in both cases,
so its own cost is the same on both sides and the difference is TLS (client and server).

    /usr/bin/python3 bench/tls_bench.py --build-dir build [--preset 1m] [--rounds 2]

Rounds alternate plaintext and TLS so that a change in machine load hits both. Prints figures only.
"""
import argparse
import http.client
import json
import os
import ssl
import statistics
import sys
import tempfile
import time

import benchlib

sys.path.insert(0, os.path.join(benchlib.REPO, "tests", "integration"))
from tls_certs import TestCa  # noqa: E402  (the tests' throw-away CA)


def ingest(args, server, ca_file, shape):
    cmd = [benchlib.binary(args, "ingest_bench"), "--transport", "grpc", "--target", server.grpc,
           "--shape", shape, "--server-pid", str(server.pid), "--streams", "4", "--inflight", "8",
           "--rows-per-batch", "1000", "--label", "tls" if ca_file else "plaintext"]
    if ca_file:
        cmd += ["--tls-ca", ca_file]
    return benchlib.run_client(cmd, echo=False)


def requests(server, context, count, keep_alive):
    """Mean and median seconds per GET of a small series answer."""
    host, port = server.http.split(":")
    target = "/api/v1/series?run=q&metric=loss"

    def connect():
        if context:
            return http.client.HTTPSConnection(host, int(port), context=context, timeout=30)
        return http.client.HTTPConnection(host, int(port), timeout=30)

    conn = connect()
    times = []
    for _ in range(count):
        if not keep_alive:
            conn.close()
            conn = connect()
        t0 = time.perf_counter()
        conn.request("GET", target)
        r = conn.getresponse()
        body = r.read()
        times.append(time.perf_counter() - t0)
        assert r.status == 200 and body, (r.status, body[:200])
    conn.close()
    return statistics.mean(times), statistics.median(times)


def one_round(args, ca, cert, tls, results):
    extra = ["--tls-cert", str(cert.cert), "--tls-key", str(cert.key)] if tls else []
    kind = "tls" if tls else "plaintext"
    data_dir = benchlib.scratch_dir(args, "tls-bench-" + kind)
    with benchlib.Server(args, data_dir, extra) as server:
        figures = ingest(args, server, str(ca.cert) if tls else None, args.shape)
        assert figures["failed_requests"] == 0, figures
        context = ssl.create_default_context(cafile=str(ca.cert)) if tls else None
        # One small series to read back, written over the same kind of connection.
        host, port = server.http.split(":")
        conn = (http.client.HTTPSConnection(host, int(port), context=context) if tls
                else http.client.HTTPConnection(host, int(port)))
        lines = "\n".join(json.dumps({"run": "q", "step": s, "time": 1767225600.0 + s, "metrics": {"loss": 1.0 / (s + 1)}}) for s in range(200)) + "\n"
        conn.request("POST", "/api/v1/write", lines, {"Content-Type": "application/x-ndjson"})
        assert conn.getresponse().status == 200
        conn.close()
        requests(server, context, 200, True)  # warm-up
        kept = requests(server, context, args.requests, True)
        fresh = requests(server, context, args.requests // 4, False)
    r = results.setdefault(kind, {"points_per_s": [], "cpu_per_mpoint": [], "kept": [], "fresh": []})
    r["points_per_s"].append(figures["points_per_s"])
    r["cpu_per_mpoint"].append(figures["server_cpu_s"] / figures["points_sent"] * 1e6)
    r["kept"].append(kept[1])
    r["fresh"].append(fresh[1])
    print(f"  {kind:9s} ingest {figures['points_per_s'] / 1e6:.2f} M points/s, server "
          f"{figures['server_cpu_s']:.2f} CPU-s for {figures['points_sent'] / 1e6:.1f} M points; "
          f"GET keep-alive median {kept[1] * 1e6:.0f} us, new connection median {fresh[1] * 1e6:.0f} us",
          flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    benchlib.add_common_args(parser)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--requests", type=int, default=4000)
    args = parser.parse_args()
    args.shape = "8x50x25000" if args.preset == "10m" else "8x50x2500"
    with tempfile.TemporaryDirectory() as tmp:
        ca = TestCa(os.path.join(tmp, "ca"))
        cert = ca.issue("server")
        print(f"TLS cost, gRPC ingest of {args.shape} (runs x metrics x steps), {args.requests} GETs "
              f"per round, {args.rounds} rounds, {os.cpu_count()} CPUs; ECDSA P-256 certificate")
        results = {}
        for i in range(args.rounds):
            print(f"round {i + 1}")
            for tls in (False, True):
                one_round(args, ca, cert, tls, results)
    med = {k: {f: statistics.median(v) for f, v in r.items()} for k, r in results.items()}
    p, t = med["plaintext"], med["tls"]
    print("medians over rounds:")
    print(f"  ingest       plaintext {p['points_per_s'] / 1e6:.2f} M points/s, TLS {t['points_per_s'] / 1e6:.2f} "
          f"({t['points_per_s'] / p['points_per_s']:.2f}x)")
    print(f"  server CPU   plaintext {p['cpu_per_mpoint']:.3f} s per M points, TLS {t['cpu_per_mpoint']:.3f} "
          f"(+{(t['cpu_per_mpoint'] - p['cpu_per_mpoint']) * 1e3:.0f} ns per point)")
    print(f"  GET, kept    plaintext {p['kept'] * 1e6:.0f} us, TLS {t['kept'] * 1e6:.0f} us "
          f"(+{(t['kept'] - p['kept']) * 1e6:.0f} us per request)")
    print(f"  GET, new connection  plaintext {p['fresh'] * 1e6:.0f} us, TLS {t['fresh'] * 1e6:.0f} us "
          f"(+{(t['fresh'] - p['fresh']) * 1e6:.0f} us per handshake, client and server)")


if __name__ == "__main__":
    main()
