#!/usr/bin/env python3
"""ctest driver: runs `trainwatch detect` over the anomaly dev set and scores it with its score.py.

    devset_check.py TRAINWATCH_BINARY DEV_DIR

Prints the scorer's summary line; fails if macro_f1 < 0.9 or fp_per_10k_healthy > 1.
"""
import glob
import os
import subprocess
import sys
import tempfile


def main():
    binary, dev = sys.argv[1], sys.argv[2]
    runs = sorted(glob.glob(os.path.join(dev, "run_*.jsonl")))
    if not runs:
        print("no run_*.jsonl in %s" % dev)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        alerts = os.path.join(tmp, "alerts.jsonl")
        with open(alerts, "w") as out:
            subprocess.run([binary, "detect"] + runs, stdout=out, check=True)
        score = subprocess.run([sys.executable, os.path.join(dev, "score.py"),
                                os.path.join(dev, "labels.json"), alerts],
                               stdout=subprocess.PIPE, universal_newlines=True, check=True)
    lines = score.stdout.strip().splitlines()
    summary = lines[-1] if lines else ""
    print(score.stdout)
    fields = dict(kv.split("=", 1) for kv in summary.split())
    macro, fp = float(fields["macro_f1"]), float(fields["fp_per_10k_healthy"])
    if macro < 0.9 or fp > 1:
        print("FAIL: need macro_f1 >= 0.9 and fp_per_10k_healthy <= 1: %s" % summary)
        return 1
    print("OK: %s" % summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
