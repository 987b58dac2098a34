#!/usr/bin/env python3
"""Scores `trainwatch detect` on the labelled anomaly sets with their own scorers (stdlib only).

    score_sets.py BINARY dense DIR [--min-macro X] [--max-fp Y] [--also OTHER]
    score_sets.py BINARY real DIR  [--min-macro X] [--max-fp Y] [--also OTHER]
    score_sets.py BINARY sweep DIR [--cadences 10,50,100,500] [--max-drop D] [--drop-at 100]

`dense`: the synthetic-injection dev set (run_*.jsonl, labels.json, score.py), scored by score.py.
`real`: the real-log kit (runs/*.jsonl, labels.json, score_sparse.py), scored by score_sparse.py.
`sweep`: the dense set subsampled to one training record every N steps, scored per cadence by the
real kit's row-based scorer (score_sparse.py, with --also-step-tol so that cadence 1 is scored as
score.py scores it); the scorer is taken from --sparse-scorer (default: the real kit beside DIR).

Subsampling keeps the records of steps that are multiples of N and, of the other records, only
their eval metrics (the eval records a sparse logger writes between training records). A label
is kept where the subsampled log still shows it, by the real kit's own labelling rules (its
README): a `nan` needs a kept non-finite value in its episode, a `loss_spike` a kept loss >= 2x
the median of the 20 kept losses before it, a `grad_explosion` a kept grad norm >= 10x the median
of the 20 kept norms before it, within the episode (up to the first non-finite record); the
other kinds are lasting changes, visible whenever a kept training record follows the onset. A
label the log cannot show (a one-step spike between two logged steps, an isolated NaN, an
explosion whose only logged sign is the NaN it ended in) becomes an ambiguous zone, neither
rewarded nor penalised (and a faulty run with no visible label is left out). A visible label's onset moves to the first kept record at or after it
(`stalled`: the last kept record before the gap, where the alert is attributed).

Every mode prints the scorer's table and summary line and fails (exit 1) when a bound is missed.
`--also OTHER` scores another copy of the set (../shared beside the checkout) after DIR, when its
files differ from DIR's: its table and score line are printed ("NOTE ...") and hold no bound, since
the bounds were set on DIR. Lines `trainwatch detect` refuses are counted and reported, and the
alerts of the other lines scored (the command names each refused line on stderr).
"""
import argparse
import glob
import hashlib
import json
import os
import math
import subprocess
import sys
import tempfile

EVAL_PREFIXES = ("val", "eval", "test", "valid", "validation", "dev")


def is_eval(name):
    for p in EVAL_PREFIXES:
        if name == p or (name.startswith(p) and not name[len(p)].isalnum()):
            return True
    return False


def run_detect(binary, files, alerts_path):
    """Runs `trainwatch detect`; exit 1 (some lines refused, each named on stderr) is reported, not fatal."""
    if not files:
        raise SystemExit("FAIL: no run files to score")
    with open(alerts_path, "w") as out:
        rc = subprocess.run([binary, "detect"] + files, stdout=out).returncode
    if rc == 1:
        print("NOTE trainwatch detect refused some lines (named above); the rest is scored")
    elif rc != 0:
        raise SystemExit("FAIL: trainwatch detect exited with %d" % rc)


def fingerprint(d):
    """SHA-256 over the relative paths and bytes of every file under d (what a copy of a set holds)."""
    h = hashlib.sha256()
    for root, dirs, names in os.walk(d):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(root, name)
            h.update(os.path.relpath(path, d).encode() + b"\0")
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()


def score(cmd):
    res = subprocess.run([sys.executable] + cmd, stdout=subprocess.PIPE, universal_newlines=True, check=True)
    text = res.stdout.strip()
    summary = text.splitlines()[-1] if text else ""
    fields = dict(kv.split("=", 1) for kv in summary.split())
    return text, float(fields["macro_f1"]), float(fields["fp_per_10k_healthy"])


def check(name, macro, fp, min_macro, max_fp):
    if macro < min_macro or fp > max_fp:
        print("FAIL %s: need macro_f1 >= %.2f and fp_per_10k_healthy <= %.2f, got %.4f and %.4f"
              % (name, min_macro, max_fp, macro, fp))
        return False
    print("OK %s: macro_f1=%.4f fp_per_10k_healthy=%.4f" % (name, macro, fp))
    return True


def dense(binary, d, tmp, args, report=True):
    runs = sorted(glob.glob(os.path.join(d, "run_*.jsonl")))
    alerts = os.path.join(tmp, "dense.jsonl")
    run_detect(binary, runs, alerts)
    text, macro, fp = score([os.path.join(d, "score.py"), os.path.join(d, "labels.json"), alerts])
    print(text)
    if not report:
        return True, macro, fp
    return check("dense set", macro, fp, args.min_macro, args.max_fp)


def real(binary, d, tmp, args, report=True):
    runs = sorted(glob.glob(os.path.join(d, "runs", "*.jsonl")))
    alerts = os.path.join(tmp, "real.jsonl")
    run_detect(binary, runs, alerts)
    text, macro, fp = score([os.path.join(d, "score_sparse.py"), os.path.join(d, "labels.json"), alerts,
                             "--runs-dir", os.path.join(d, "runs")])
    print(text)
    if not report:
        return True, macro, fp
    return check("real kit", macro, fp, args.min_macro, args.max_fp)


def rolling_ratio(history, value):
    """value / median of the last 20 finite positive values of history (None when too few)."""
    recent = [v for v in history if math.isfinite(v) and v > 0][-20:]
    if len(recent) < 2 or not math.isfinite(value):
        return None
    recent.sort()
    mid = len(recent) // 2
    median = recent[mid] if len(recent) % 2 else (recent[mid - 1] + recent[mid]) / 2
    return value / median


def shows(kind, kept, onset, last):
    """Whether the kept training records [(step, metrics)] show an anomaly of `kind` in [onset, last]."""
    key = {"loss_spike": ("loss", 2.0), "grad_explosion": ("grad_norm", 10.0)}.get(kind)
    history = []
    for step, metrics in kept:
        in_episode = onset <= step <= last
        if kind == "nan":
            if in_episode and any(not math.isfinite(v) for v in metrics.values()):
                return True
            continue
        if key is None:
            if step >= onset:
                return True
            continue
        value = metrics.get(key[0])
        if value is None:
            continue
        if in_episode:
            if not math.isfinite(value):
                return False  # the episode ended in a NaN before the log showed it
            ratio = rolling_ratio(history, value)
            if ratio is not None and ratio >= key[1]:
                return True
        history.append(value)
    return False


def subsample(d, cadence, out_dir):
    """Writes <out_dir>/runs/<run>.jsonl and <out_dir>/labels.json; returns the run files."""
    labels = json.load(open(os.path.join(d, "labels.json")))
    os.makedirs(os.path.join(out_dir, "runs"), exist_ok=True)
    out_labels = {}
    files = []
    for run, lab in sorted(labels.items()):
        kept = []  # (step, is_training)
        train_records = []  # (step, metrics) of the kept training records
        path = os.path.join(out_dir, "runs", run + ".jsonl")
        with open(os.path.join(d, run + ".jsonl")) as src, open(path, "w") as dst:
            for line in src:
                rec = json.loads(line)
                if rec["step"] % cadence != 0:
                    evals = {k: v for k, v in rec["metrics"].items() if is_eval(k)}
                    if not evals:
                        continue
                    rec["metrics"] = evals
                    kept.append((rec["step"], False))
                else:
                    kept.append((rec["step"], True))
                    train_records.append((rec["step"], rec["metrics"]))
                dst.write(json.dumps(rec) + "\n")
        files.append(path)
        train_steps = [s for s, t in kept if t]
        steps = [s for s, _ in kept]
        anomalies, ambiguous = [], []
        for a in lab["anomalies"]:
            onset, end = a["onset"], a.get("end")
            last = end if end is not None else float("inf")
            if a["kind"] == "stalled":
                before = [s for s in train_steps if s <= onset]
                visible = bool(before) and any(s > onset for s in steps)
                new_onset = before[-1] if before else onset
            else:
                visible = shows(a["kind"], train_records, onset, last) or (
                    a["kind"] == "overfitting" and any(s >= onset for s in steps))
                later = [s for s in steps if s >= onset]
                new_onset = later[0] if later else onset
            entry = {"kind": a["kind"], "onset": new_onset, "end": end}
            if visible:
                anomalies.append(entry)
            else:
                ambiguous.append(dict(entry, onset=onset, why="not visible at cadence %d" % cadence))
        out_labels[run] = {"category": "anomalous" if lab["anomalies"] else "healthy",
                           "anomalies": anomalies, "ambiguous": ambiguous,
                           # A faulty run whose every fault is invisible is not a healthy run.
                           "exclude_fp": bool(lab["anomalies"]) and not anomalies}
    with open(os.path.join(out_dir, "labels.json"), "w") as f:
        json.dump(out_labels, f)
    return files


def sweep(binary, d, tmp, args):
    scorer = args.sparse_scorer or os.path.join(os.path.dirname(os.path.abspath(d)), "anomaly-real-dev",
                                                "score_sparse.py")
    results = {}
    ok = True
    for cadence in [1] + [int(c) for c in args.cadences.split(",")]:
        out_dir = os.path.join(tmp, "cadence%d" % cadence)
        files = subsample(d, cadence, out_dir)
        alerts = os.path.join(out_dir, "alerts.jsonl")
        run_detect(binary, files, alerts)
        text, macro, fp = score([scorer, os.path.join(out_dir, "labels.json"), alerts, "--runs-dir",
                                 os.path.join(out_dir, "runs"), "--also-step-tol"])
        print("== cadence %d steps" % cadence)
        print(text)
        results[cadence] = (macro, fp)
    print("cadence sweep (macro_f1, fp_per_10k_healthy):")
    for cadence, (macro, fp) in results.items():
        print("  every %4d steps: macro_f1=%.4f fp_per_10k_healthy=%.4f" % (cadence, macro, fp))
    at = args.drop_at
    if at in results and results[1][0] - results[at][0] > args.max_drop:
        print("FAIL cadence sweep: macro_f1 at %d steps is %.4f, more than %.2f below %.4f (every step)"
              % (at, results[at][0], args.max_drop, results[1][0]))
        ok = False
    elif at in results:
        print("OK cadence sweep: macro_f1 at %d steps within %.2f of every step" % (at, args.max_drop))
    return ok


def also(name, scorer, binary, d, other, tmp):
    """Scores `other`, another copy of the set in d, when it differs from d; no bound (see the docstring)."""
    if fingerprint(d) == fingerprint(other):
        print("NOTE %s: %s holds the same files as %s" % (name, other, d))
        return
    print("== %s: %s differs from %s; scored without a bound" % (name, other, d))
    out = os.path.join(tmp, "also")
    os.makedirs(out)
    try:
        _, macro, fp = scorer(binary, other, out, None, report=False)
    except (SystemExit, subprocess.CalledProcessError, KeyError, ValueError, OSError) as e:
        print("NOTE %s in %s could not be scored: %s" % (name, other, e))
        return
    print("NOTE %s in %s: macro_f1=%.4f fp_per_10k_healthy=%.4f (not bounded)" % (name, other, macro, fp))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binary")
    p.add_argument("mode", choices=["dense", "real", "sweep"])
    p.add_argument("dir")
    p.add_argument("--min-macro", type=float, default=0.0)
    p.add_argument("--max-fp", type=float, default=float("inf"))
    p.add_argument("--cadences", default="10,50,100,500")
    p.add_argument("--max-drop", type=float, default=0.05)
    p.add_argument("--drop-at", type=int, default=100)
    p.add_argument("--sparse-scorer")
    p.add_argument("--also", help="another copy of the set, scored without a bound when it differs")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ok = {"dense": dense, "real": real, "sweep": sweep}[args.mode](args.binary, args.dir, tmp, args)
        if args.also and args.mode != "sweep":
            name = {"dense": "dense set", "real": "real kit"}[args.mode]
            also(name, {"dense": dense, "real": real}[args.mode], args.binary, args.dir, args.also, tmp)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
