#!/usr/bin/env python3
"""Streaming anomaly detector prototype for trainwatch (research only).

Reads run_*.jsonl in step order, one record at a time, keeps O(1) state per series,
emits alerts.jsonl. Every alert at step s uses only records <= s.
"""
import json, math, glob, os, sys

P = dict(
    warm=50,            # records before any baseline-based detector may fire
    a_slow=0.02,        # EWMA weight of baselines (time constant 50 records)
    # nan
    # lr excursion ("shock"): lr above everything the schedule produced so far
    shock_ratio=3.0, shock_window=300,
    expl_ratio=10.0,    # grad_norm >= 10x baseline = explosion (one order of magnitude)
    expl_persist=3, expl_win=5,
    spike_ratio=3.0, spike_k=5.0, spike_maxlen=4,
    osc_ratio=2.0, osc_age=100, div_rise=math.log(2.0), div_persist=100,
    vanish_ratio=100.0, vanish_persist=5,
    plateau_ratio=100.0, plateau_persist=10,
    of_rel=0.05, of_k=2, of_train_drop=0.10, of_window=6, of_a=0.3, of_k_noise=3.0, of_smooth=0.5,
    stall_floor=300.0, stall_mult=10.0,
    dead_after=3,
    tp_ratio=2.5, tp_win=21, tp_persist=20,
)

LOSS_NAMES = ["loss", "train/loss", "train_loss"]
GN_NAMES = ["grad_norm", "train/grad_norm"]
UR_NAMES = ["update_ratio"]
PN_NAMES = ["param_norm"]
TRAINING_KINDS = ("loss_spike", "loss_oscillation", "divergence", "plateau", "grad_vanishing",
                  "overfitting", "grad_explosion")
LR_NAMES = ["lr", "learning_rate", "train/lr"]
EVAL_PREFIXES = ("val", "eval", "test", "valid")
VAL_NAMES = ["val_loss", "val/loss", "eval/loss", "eval_loss"]


def fin(x):
    return isinstance(x, (int, float)) and math.isfinite(x)


def pick(m, names):
    for n in names:
        if n in m:
            return m[n]
    for k in m:  # fallback: any *_loss that is not eval, e.g. ctc_loss
        if names is LOSS_NAMES and k.endswith("loss") and not k.startswith(("val", "eval", "test")):
            return m[k]
    return None


class Ewma:
    """EWMA of x and of |x - mean| (robust-ish scale), with warm-up by plain averaging."""
    __slots__ = ("a", "n", "m", "d")

    def __init__(self, a):
        self.a, self.n, self.m, self.d = a, 0, 0.0, 0.0

    def update(self, x, ds=1):
        self.n += 1
        a = self.a if ds == 1 else 1.0 - (1.0 - self.a) ** ds
        w = max(a, 1.0 / self.n)
        if self.n == 1:
            self.m = x
            return
        self.d += w * (abs(x - self.m) - self.d)
        self.m += w * (x - self.m)


class Detector:
    def __init__(self, run):
        self.run = run
        self.alerts = []
        self.n = 0
        self.suppressed = {}  # kind -> until step (inclusive)
        self.prev_nonfinite = False
        self.dead = False
        # lr
        self.lr_max = 0.0
        self.lr_prev = None
        self.lr_hist_min = None   # min lr since last restart marker
        self.restart_until = -1
        self.shock = None
        # grad
        self.gn = Ewma(P["a_slow"]); self.gn_hits = []
        self.layers = {}; self.vanish_cnt = 0
        # loss
        self.lo = Ewma(P["a_slow"])
        self.lo_fast = Ewma(0.2)
        self.lo_slow = Ewma(P["a_slow"])      # slow level for divergence
        self.lo_min = None
        self.dif_base = Ewma(0.01); self.dif_fast = Ewma(0.05); self.last_logl = None
        self.spike = None
        # update ratio
        self.ur = Ewma(P["a_slow"]); self.ur_cnt = 0; self.lr_drop_step = -10**9
        # val
        self.val_min = None; self.val_min_step = None; self.val_train_at_min = None; self.val_up = 0
        self.val_done = False; self.val_n = 0; self.val_last = None; self.val_noise = 0.0; self.val_s = 0.0; self.val_d1 = None; self.val_since = 0
        # time
        self.t_prev = None; self.dt_max = 0.0; self.dt_ring = []; self.dt_base = Ewma(0.01)
        self.tp_cnt = 0; self.tp_ndt = 0
        self.diag = []
        self.last_step = None
        self.train_step = None; self.ds = 1; self.nf_run = 0; self.pn_prev = None; self.div_since = None; self.lr_dropped = False
        self.resume_until = -1
        self.pk = {}

    def peak(self, name, v):
        if v > self.pk.get(name, -1e300):
            self.pk[name] = v

    # ---------------------------------------------------------------- alerts
    def alert(self, step, kind, **why):
        if self.suppressed.get(kind, -1) >= step:
            return False
        self.alerts.append(dict(run=self.run, kind=kind, step=step, **why))
        # inhibition: consequences of a persistent training fault
        if kind in ("grad_explosion", "divergence", "grad_vanishing", "plateau", "loss_oscillation"):
            for k in ("loss_spike", "loss_oscillation", "divergence", "plateau", "grad_vanishing",
                      "overfitting", "grad_explosion"):
                if k != kind:
                    self.suppressed[k] = 10**12
            self.suppressed[kind] = 10**12  # persistent: one alert per run-incident
        if kind == "loss_spike":
            self.suppressed["grad_explosion"] = step + 5
        return True

    # ---------------------------------------------------------------- main
    def feed(self, rec):
        s = rec["step"]; m = rec.get("metrics", {}); t = rec.get("time")
        self.n += 1
        if self.last_step is not None and s < self.last_step:
            self.resume(s)
        self.time_detectors(s, t)
        train = {k: v for k, v in m.items() if not k.startswith(EVAL_PREFIXES)}
        if train:
            # steps elapsed since the previous training record: EWMA weights are per step, so
            # "every N steps" logging keeps the same time constants in steps
            self.ds = max(1, s - self.train_step) if self.train_step is not None else 1
            self.train_step = s
            # nan: a non-finite training-side metric; one alert per contiguous non-finite episode
            nonfinite = any(isinstance(v, (int, float)) and not math.isfinite(v) for v in train.values())
            if nonfinite and not self.prev_nonfinite:
                self.alert(s, "nan")
            self.prev_nonfinite = nonfinite
            if nonfinite:
                self.nf_run += 1
                if self.nf_run >= P["dead_after"]:  # run is dead: everything else is a consequence
                    for k in TRAINING_KINDS:
                        self.suppressed[k] = 10**12
                return
            self.nf_run = 0
            L = pick(train, LOSS_NAMES); lr = pick(train, LR_NAMES); gn = pick(train, GN_NAMES)
            ur = pick(train, UR_NAMES); pn = pick(train, PN_NAMES)
            self.lr_detector(s, lr, gn, L)
            self.grad_detectors(s, gn, train)
            self.loss_detectors(s, L, lr)
            self.plateau_detector(s, ur, lr, pn)
        v = pick(m, VAL_NAMES)
        if v is not None and fin(v):
            self.overfit_detector(s, v)


    def resume(self, s):
        # resumed from a checkpoint: steps go back. No time delta across the restart; loss
        # detectors re-arm after a short re-warm (the reload can bump the loss).
        self.t_prev = None
        self.restart_until = s + P["warm"]
        self.spike = None

    # ---------------------------------------------------------------- time
    def time_detectors(self, s, t):
        if t is None:
            return
        if self.t_prev is not None and s == self.t_prev[0]:
            return  # second record of the same step (e.g. eval-only record): not a step completion
        if self.t_prev is not None:
            dt = t - self.t_prev[1]
            thr = max(P["stall_floor"], P["stall_mult"] * self.dt_max)
            self.peak('stall_dt_over_thr', dt / thr)
            if dt >= thr:
                # offline: gap discovered when the next record arrives; online the server clock
                # fires at last_time + thr with step = last logged step (same alert step).
                self.alert(self.t_prev[0], "stalled", gap_s=round(dt, 1))
            else:
                self.dt_max = max(self.dt_max, dt)
                self.throughput(s, dt / max(1, s - self.t_prev[0]))  # per-step duration
        self.t_prev = (s, t)

    def throughput(self, s, dt):
        if dt <= 0:
            return
        self.dt_ring.append(math.log(dt))
        if len(self.dt_ring) > P["tp_win"]:
            self.dt_ring.pop(0)
        self.tp_ndt += 1
        if len(self.dt_ring) < P["tp_win"]:
            return
        med = sorted(self.dt_ring)[len(self.dt_ring) // 2]
        if self.tp_ndt > P['warm']: self.peak('tp_logratio', med - self.dt_base.m)
        if self.tp_ndt > P["warm"] and med - self.dt_base.m > math.log(P["tp_ratio"]):
            self.tp_cnt += 1
            if self.tp_cnt >= P["tp_persist"]:
                self.alert(s, "throughput_drop", ratio=round(math.exp(med - self.dt_base.m), 2))
                self.dt_base.m = med  # new normal: re-baseline, alert once
                self.tp_cnt = 0
            return
        self.tp_cnt = 0
        self.dt_base.update(med)

    # ---------------------------------------------------------------- lr
    def lr_detector(self, s, lr, gn, L):
        if lr is None or not fin(lr):
            return
        if self.lr_prev is not None:
            if self.lr_max > 0 and self.n > P["warm"] // 5:
                self.peak('lr_over_max', lr / self.lr_max)
            if self.n > P["warm"] // 5 and lr > P["shock_ratio"] * self.lr_max and self.shock is None:
                self.shock = dict(step=s, gn0=self.gn.m, lo0=self.lo_slow.m, dif0=self.dif_base.m,
                                  ready=self.lo.n >= P["warm"])
                self.suppressed["loss_spike"] = s + P["shock_window"]
            elif lr > 2 * self.lr_prev and lr <= 1.5 * self.lr_max:
                # warm restart / cyclic jump back to a known lr: loss bump is expected
                self.restart_until = s + 100
                self.lo_min = None
            if self.lr_prev > 0 and lr < self.lr_prev / 100:
                self.lr_dropped = True  # one-record drop by >= 100x: a step function, not a decay
            elif lr > self.lr_max / 100:
                self.lr_dropped = False
        self.lr_max = max(self.lr_max, lr)
        self.lr_prev = lr

    # ---------------------------------------------------------------- grads
    def grad_detectors(self, s, gn, m):
        if gn is not None and fin(gn) and gn > 0:
            lg = math.log(gn)
            if self.gn.n >= P["warm"]:
                hit = lg - self.gn.m > math.log(P["expl_ratio"])
                self.peak('gn_logratio', lg - self.gn.m)
                self.gn_hits.append(hit)
                if len(self.gn_hits) > P["expl_win"]:
                    self.gn_hits.pop(0)
                sh = self.shock
                if sh and s - sh["step"] <= 50 and lg - sh["gn0"] > math.log(P["expl_ratio"]):
                    self.alert(s, "grad_explosion", via="lr_shock", ratio=round(math.exp(lg - sh["gn0"]), 1))
                elif sum(self.gn_hits) >= P["expl_persist"]:
                    self.alert(s, "grad_explosion", via="grad", ratio=round(math.exp(lg - self.gn.m), 1))
                if hit:
                    lg = self.gn.m + math.log(P["expl_ratio"])  # winsorize the baseline update
            self.gn.update(lg, self.ds)
        # per-layer vanishing: median over layers of (log g_l - baseline_l); needs >= 2 layers
        devs = []
        for k, v in m.items():
            if not k.startswith("grad_norm/") or not fin(v):
                continue
            lv = math.log(max(v, 1e-30))
            e = self.layers.get(k)
            if e is None:
                e = self.layers[k] = Ewma(P["a_slow"])
            if e.n >= P["warm"]:
                devs.append(lv - e.m)
                if lv - e.m < -math.log(P["vanish_ratio"]):
                    continue  # do not learn the collapsed level
            e.update(lv, self.ds)
        if len(devs) >= 2:
            devs.sort()
            med = devs[(len(devs) - 1) // 2]  # lower median: "at least half of the layers"
            self.peak('vanish_neglog', -med)
            if med < -math.log(P["vanish_ratio"]):
                self.vanish_cnt += 1
                if self.vanish_cnt >= P["vanish_persist"]:
                    self.alert(s, "grad_vanishing", median_ratio="%.2g" % math.exp(med))
            else:
                self.vanish_cnt = 0

    # ---------------------------------------------------------------- loss
    def loss_detectors(self, s, L, lr):
        if L is None or not fin(L):
            return
        ll = math.log(max(L, 1e-12))
        ready = self.lo.n >= P["warm"]
        # ---- spike: transient jump far above the robust baseline, confirmed by recovery.
        # While a candidate is open the baseline is frozen (a level shift must not be "recovered"
        # by a baseline that chases it).
        if ready:
            sigma = 1.2533 * self.lo.d  # mean absolute deviation -> sigma (normal), log space
            thr = max(math.log(P["spike_ratio"]), P["spike_k"] * sigma)
            z = ll - self.lo.m
            high = z > thr
            if s > self.restart_until and not self.shock:
                self.peak('spike_over_thr', z / thr)
            if self.spike is None:
                if high and s > self.restart_until and not self.shock:
                    self.spike = dict(start=s, peak=z)
                else:
                    self.lo.update(min(ll, self.lo.m + thr), self.ds)  # winsorized update
            elif not high:
                self.alert(s, "loss_spike", onset=self.spike["start"], ratio=round(math.exp(self.spike["peak"]), 1))
                self.spike = None
                self.lo.update(ll, self.ds)
            elif s - self.spike["start"] + 1 >= P["spike_maxlen"]:
                self.spike = None  # still high after spike_maxlen records: level shift, not a spike
                self.lo.update(self.lo.m + thr, self.ds)
            else:
                self.spike["peak"] = max(self.spike["peak"], z)
        else:
            self.lo.update(ll, self.ds)
        self.lo_slow.update(ll, self.ds)
        # ---- variability of log-loss first differences
        if self.last_logl is not None:
            d = abs(ll - self.last_logl)
            self.dif_fast.update(d, self.ds)
            if self.shock is None or s - self.shock["step"] > P["shock_window"]:
                self.dif_base.update(d, self.ds)
        self.last_logl = ll
        # ---- shock classification (lr excursion open)
        sh = self.shock
        if sh and s - sh["step"] > P["shock_window"]:
            self.shock = sh = None  # unclassified excursion: close it, generic detectors resume
        if sh and sh["ready"]:
            age = s - sh["step"]
            rise = self.lo_slow.m - sh["lo0"]
            vr = self.dif_fast.m / max(sh["dif0"], 1e-12)
            if age == 100 or age == 200 or age == 300:
                self.diag.append((s, age, round(rise, 2), round(vr, 2)))
            if P["osc_age"] <= age <= P["osc_age"] + 50 and vr >= P["osc_ratio"]:
                self.alert(s, "loss_oscillation", via="lr_shock", var_ratio=round(vr, 2))
            elif age >= P["osc_age"] + 50 and rise > P["div_rise"]:
                self.alert(s, "divergence", via="lr_shock", rise=round(rise, 2))
        # ---- generic divergence: smoothed loss >= 2x its running minimum for div_persist steps
        if ready and s > self.restart_until and not sh:
            if self.lo_min is None or self.lo_slow.m < self.lo_min:
                self.lo_min = self.lo_slow.m
            rise = self.lo_slow.m - self.lo_min
            self.peak('div_rise', rise)
            if rise > P["div_rise"]:
                if self.div_since is None:
                    self.div_since = s
                if s - self.div_since >= P["div_persist"]:
                    self.alert(s, "divergence", via="trend", rise=round(rise, 2))
            else:
                self.div_since = None

    # ---------------------------------------------------------------- plateau
    def plateau_detector(self, s, ur, lr, pn):
        if ur is None and lr is not None and fin(lr):
            # fallback without update_ratio: the lr itself dropped >= 100x in one record and stays
            # there. (param_norm differences are not usable: logged with ~6 digits they are
            # exactly 0 in healthy low-lr phases.)
            if self.lr_dropped and lr <= self.lr_max / 100:
                self.ur_cnt += 1
                if self.ur_cnt >= P["plateau_persist"]:
                    self.alert(s, "plateau", via="lr_drop")
            else:
                self.ur_cnt = 0
            return
        if ur is None or not fin(ur):
            return
        lu = math.log(max(ur, 1e-30))
        if self.ur.n >= P["warm"]:
            collapsed = lu - self.ur.m < -math.log(P["plateau_ratio"])
            # a collapse is a fault when lr did not decay into it: either lr unchanged (stale
            # optimizer) or lr dropped >=100x in one step (schedule bug)
            sudden = lr is None or self.lr_dropped or lr > self.lr_max / 100
            if sudden: self.peak('ur_drop_neglog', self.ur.m - lu)
            if collapsed and sudden and ur >= 0:
                self.ur_cnt += 1
                if self.ur_cnt >= P["plateau_persist"]:
                    self.alert(s, "plateau", ratio="%.2g" % math.exp(lu - self.ur.m))
                return
            self.ur_cnt = 0
        if ur > 0:
            self.ur.update(lu, self.ds)

    # ---------------------------------------------------------------- overfitting
    def overfit_detector(self, s, v):
        """val_loss turned up sharply while train loss kept falling. State: 7 scalars."""
        lv = math.log(max(v, 1e-12)); tr = self.lo_slow.m
        self.val_n += 1
        if self.val_last is not None:
            d1 = lv - self.val_last
            if self.val_d1 is not None:
                # second differences cancel a locally linear trend: E|d2| = 1.95 sigma for white noise
                d2 = abs(d1 - self.val_d1) / 1.95
                self.val_noise = d2 if self.val_n == 3 else self.val_noise + P["of_a"] * (d2 - self.val_noise)
            self.val_d1 = d1
        self.val_last = lv
        # the minimum of a noisy series is biased low: compare smoothed values (EWMA over evals)
        self.val_s = lv if self.val_n == 1 else self.val_s + P["of_smooth"] * (lv - self.val_s)
        lv = self.val_s
        if self.val_min is None or lv < self.val_min:
            self.val_min, self.val_min_step, self.val_train_at_min = lv, s, tr
            self.val_up = 0; self.val_since = 0
            return
        self.val_since += 1
        rise = lv - self.val_min
        if self.val_since <= P['of_window'] and tr < self.val_train_at_min + math.log(1 - P['of_train_drop']): self.peak('of_rise_over_thr', rise / max(math.log(1 + P['of_rel']), P['of_k_noise'] * self.val_noise))
        if (self.val_since <= P["of_window"] and rise > max(math.log(1 + P["of_rel"]), P["of_k_noise"] * self.val_noise)
                and tr < self.val_train_at_min + math.log(1 - P["of_train_drop"])):
            self.val_up += 1
            if self.val_up >= P["of_k"]:
                if self.alert(s, "overfitting", val_min_step=self.val_min_step, rise=round(rise, 3)):
                    self.suppressed["overfitting"] = 10**12
        else:
            self.val_up = 0


PEAKS = {}


def main(data_dir, out):
    alerts = []
    diags = {}
    for f in sorted(glob.glob(os.path.join(data_dir, "run_*.jsonl"))):
        run = os.path.basename(f)[:-6]
        d = Detector(run)
        with open(f) as fh:
            for line in fh:
                d.feed(json.loads(line))
        alerts += d.alerts
        if d.diag:
            diags[run] = d.diag
        PEAKS[run] = d.pk
    with open(out, "w") as fh:
        for a in alerts:
            fh.write(json.dumps(a) + "\n")
    if os.environ.get("DIAG"):
        for r, x in diags.items():
            print("diag", r, x)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/work/shared/anomaly-dev",
         sys.argv[2] if len(sys.argv) > 2 else "/tmp/detect-proto/alerts.jsonl")
