#!/usr/bin/env node
// Dashboard benchmark (issue 5): the embedded web app in Debian's headless Chromium (playwright-core
// from web/node_modules) against a fresh `trainwatch serve`. Prints figures; never passes or fails on
// one. See bench/README.md ("Dashboard").
//
//   node bench/dashboard_bench.mjs --build-dir build [--quick]
//
// 1. navigation → 50 charts × 8 runs drawn (first screen; scrolling through; all 50 in one tall view)
// 2. frame times while drag-zooming a chart, and mouse-up → every chart in view redrawn with the range
// 3. 10,000 runs: regex typed into runs-search → runs-count right; frame times scrolling the table
// 4. write of a point at a new step (POST /api/v1/write) → the chart's data-last-step and pixels
//
// Times are taken inside the page on one clock (performance.now()); "drawn" is the first animation
// frame in which the condition holds (the frame that paints it). The server and browser launch follow
// web/tests/harness.mjs (same Chromium flags); the small server wrapper here is copied, not shared.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { chromium } = createRequire(path.join(REPO, 'web', 'package.json'))('playwright-core');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const CHROMIUM_ARGS = [ // as web/tests/harness.mjs
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--no-first-run',
];
// Headless Chromium 156 opens the browser UI's omnibox popup (a WebUI page in a renderer process of
// its own) with every new window, i.e. with every browser context this benchmark opens per
// navigation: about 1 CPU-second each, competing with the page on a small machine, and nothing a
// user's browser pays per page load. Left out unless --with-omnibox-popup.
const NO_OMNIBOX_POPUP = '--disable-features=WebUIOmniboxPopup,WebUIOmniboxFullPopup,WebUIOmniboxAimPopup';

// ------------------------------------------------------------------------------------------------
// Flags

const USAGE = `usage: node bench/dashboard_bench.mjs [--build-dir DIR] [--quick] [--work-dir DIR] [--steps N] [--runs N] [--only LIST] [--with-omnibox-popup]
  --build-dir DIR   CMake build directory holding bin/trainwatch (default: repo build/)
  --quick           a ~1 minute smoke run (fewer navigations, zooms, patterns and writes)
  --work-dir DIR    scratch data directory goes to DIR/scratch/dashboard
                    (default $TRAINWATCH_BENCH_DIR or /tmp/trainwatch-bench)
  --steps N         steps per series of the 8 × 50 chart page (default 5000)
  --runs N          runs for the runs-table figures (default 10000)
  --only LIST       some of: nav,zoom,runs,live (default: all)
  --with-omnibox-popup  let headless Chromium open its omnibox popup WebUI with each new window
                    (as this benchmark did before; ~1 CPU-s per navigation)`;

function parseArgs(argv) {
  const a = {
    buildDir: path.join(REPO, 'build'), quick: false, steps: 5000, manyRuns: 10000,
    workDir: process.env.TRAINWATCH_BENCH_DIR || '/tmp/trainwatch-bench',
    only: ['nav', 'zoom', 'runs', 'live'], omniboxPopup: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const v = () => {
      if (i + 1 >= argv.length) { console.error(USAGE); process.exit(2); }
      return argv[++i];
    };
    switch (argv[i]) {
      case '--build-dir': a.buildDir = path.resolve(v()); break;
      case '--quick': a.quick = true; break;
      case '--work-dir': a.workDir = path.resolve(v()); break;
      case '--steps': a.steps = Number(v()); break;
      case '--runs': a.manyRuns = Number(v()); break;
      case '--only': a.only = v().split(',').filter(Boolean); break;
      case '--with-omnibox-popup': a.omniboxPopup = true; break;
      case '-h': case '--help': console.log(USAGE); process.exit(0); break;
      default: console.error(USAGE); process.exit(2);
    }
  }
  if (!(a.steps >= 10) || !(a.manyRuns >= 1) ||
      !a.only.length || a.only.some((x) => !['nav', 'zoom', 'runs', 'live'].includes(x))) { console.error(USAGE); process.exit(2); }
  return a;
}

const ARGS = parseArgs(process.argv.slice(2));
const Q = ARGS.quick;
const CFG = {
  runs: 8, metrics: 50, steps: ARGS.steps,
  navigations: Q ? 2 : 5, // per mode, after one unrecorded warm-up navigation
  zoomCycles: Q ? 2 : 5, // zoom, nested zoom, reset
  patternsUsed: Q ? 4 : 8,
  scrollMs: Q ? 1500 : 3000,
  liveWrites: Q ? 15 : 50,
  liveSteps: 1000,
};
const PROJECT = 'bench';
const RUN_IDS = Array.from({ length: CFG.runs }, (_, i) => `r${i}`);
const GROUPS = ['grad', 'opt', 'sys', 'train', 'val'];
const METRICS = Array.from({ length: CFG.metrics }, (_, i) =>
  `${GROUPS[i % GROUPS.length]}/m${String(Math.floor(i / GROUPS.length)).padStart(2, '0')}`);
const LAST = CFG.steps - 1;
const T0 = Math.floor(Date.now() / 1000) - 86400;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ------------------------------------------------------------------------------------------------
// Figures

function rank(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}
function pct(values, qs = [0.5, 0.9, 0.99], unit = 'ms', digits = 1) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return 'no samples';
  const parts = qs.map((q) => `p${Math.round(q * 100)} ${rank(v, q).toFixed(digits)}`);
  return `${parts.join('  ')}  max ${v[v.length - 1].toFixed(digits)} ${unit} (n=${v.length})`;
}
const p = (values, q) => {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return v.length ? rank(v, q) : NaN;
};
const sum = (xs) => xs.reduce((s, x) => s + x, 0);
const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '—');
const SUMMARY = [];
const summary = (figure, measured) => SUMMARY.push([figure, measured]);

// ------------------------------------------------------------------------------------------------
// CPU: the server, the browser (every other process this script started) and everything else

const CLK_TCK = 100;
function procStat(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // fields 4 (ppid) and 14–17 (utime stime cutime cstime) of the full line
    return { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / CLK_TCK };
  } catch { return null; }
}
function treeCpu(root) { // CPU seconds of root's descendants (children reaped inside the tree included)
  const kids = new Map();
  const cpu = new Map();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const st = procStat(name);
    if (!st) continue;
    cpu.set(Number(name), st.cpu);
    if (!kids.has(st.ppid)) kids.set(st.ppid, []);
    kids.get(st.ppid).push(Number(name));
  }
  let total = 0;
  const stack = [...(kids.get(root) || [])];
  while (stack.length) {
    const pid = stack.pop();
    total += cpu.get(pid) || 0;
    stack.push(...(kids.get(pid) || []));
  }
  return total;
}
function machineBusy() {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].split(/\s+/).slice(1, 9).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = f;
  return (user + nice + system + irq + softirq + steal) / CLK_TCK;
}
function cpuMark(server) {
  const self = process.cpuUsage();
  return {
    t: performance.now(), machine: machineBusy(), tree: treeCpu(process.pid),
    server: procStat(server.proc.pid)?.cpu ?? 0, self: (self.user + self.system) / 1e6,
  };
}
function cpuLine(a, b) {
  const s = (b.t - a.t) / 1000;
  const server = (b.server - a.server) / s;
  const browser = (b.tree - a.tree - (b.server - a.server)) / s;
  const self = (b.self - a.self) / s;
  const others = Math.max(0, (b.machine - a.machine) / s - (b.tree - a.tree) / s - self);
  return `cores busy over ${s.toFixed(1)} s: server ${server.toFixed(2)}, browser ${browser.toFixed(2)}, ` +
    `this script ${self.toFixed(2)}, others ${others.toFixed(2)} (of ${os.cpus().length})`;
}

// ------------------------------------------------------------------------------------------------
// The server (a minimal copy of web/tests/harness.mjs's Server; ports chosen by the server, as
// bench/benchlib.py does)

class Server {
  async start(bin, dataDir) {
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.mkdirSync(dataDir, { recursive: true });
    this.logPath = `${dataDir.replace(/\/$/, '')}.log`;
    const err = fs.openSync(this.logPath, 'w');
    this.proc = spawn(bin, ['serve', '--data-dir', dataDir, '--listen', '127.0.0.1:0',
      '--grpc-listen', '127.0.0.1:0', '--log-level', 'warn'], { stdio: ['ignore', 'pipe', err] });
    fs.closeSync(err);
    this.exited = new Promise((r) => this.proc.on('exit', (code, sig) => r({ code, sig })));
    let out = '';
    this.url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('trainwatch did not start in 60 s')), 60000);
      this.proc.stdout.on('data', (d) => {
        out += d;
        const m = out.match(/is serving (http:\/\/[\d.]+:\d+)/);
        if (m) { clearTimeout(timer); resolve(m[1]); }
      });
      this.proc.on('exit', (code) => reject(new Error(`trainwatch exited (${code}) before serving; see ${this.logPath}`)));
    });
    this.proc.stdout.resume();
    const u = new URL(this.url);
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    this.host = u.hostname;
    this.port = Number(u.port);
    return this;
  }

  request(method, p, body = null, headers = {}) {
    return new Promise((resolve, reject) => {
      const req = http.request({ agent: this.agent, host: this.host, port: this.port, method, path: p, headers },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString() }));
        });
      req.on('error', reject);
      req.end(body);
    });
  }

  async write(body) {
    const r = await this.request('POST', '/api/v1/write', body, { 'Content-Type': 'application/x-ndjson' });
    const reply = r.status === 200 ? JSON.parse(r.text) : null;
    if (!reply || reply.lines_rejected) throw new Error(`write: ${r.status} ${r.text.slice(0, 300)}`);
    return reply;
  }

  /** http_requests_total and the sum of their durations (s), from /metrics (this call included). */
  async httpCounters() {
    const r = await this.request('GET', '/metrics');
    const get = (name) => Number((r.text.match(new RegExp(`^${name} (\\S+)$`, 'm')) || [])[1]);
    return { n: get('trainwatch_http_requests_total'), s: get('trainwatch_http_request_duration_seconds_sum') };
  }

  async waitIdle(limitS = 60) {
    const t0 = Date.now();
    let last = procStat(this.proc.pid).cpu;
    while (Date.now() - t0 < limitS * 1000) {
      await sleep(500);
      const now = procStat(this.proc.pid).cpu;
      if (now - last < 0.05) break;
      last = now;
    }
    return (Date.now() - t0) / 1000;
  }

  async stop() {
    if (!this.proc || this.proc.exitCode !== null) return;
    this.proc.kill('SIGTERM');
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 20000);
    await this.exited;
    clearTimeout(t);
    this.agent.destroy();
  }
}

// ------------------------------------------------------------------------------------------------
// Data

function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** NDJSON of one run's steps [from, to), all METRICS at each step: decaying curves with noise. */
function chartLines(ri, from, to) {
  const rnd = rng(1000 + ri * 7919 + from);
  const out = [];
  for (let step = from; step < to; step++) {
    let m = '';
    for (let k = 0; k < METRICS.length; k++) {
      const v = (1 + k % 7) * Math.exp(-step / (800 + 300 * ri + 40 * k)) + 0.05 * (1 + ri) + 0.03 * rnd();
      m += `${k ? ',' : ''}"${METRICS[k]}":${v.toFixed(5)}`;
    }
    out.push(`{"project":"${PROJECT}","run":"${RUN_IDS[ri]}","step":${step},"time":${T0 + step * 0.5},"metrics":{${m}}}`);
  }
  return out.join('\n') + '\n';
}

const MODELS = ['resnet', 'vit', 'bert', 'gpt', 'mlp'];
const LRS = ['1e-3', '3e-4', '1e-4', '3e-5'];
function manyRunId(i) {
  return `${MODELS[i % MODELS.length]}-lr${LRS[Math.floor(i / MODELS.length) % LRS.length]}-s${String(i).padStart(5, '0')}`;
}
const PATTERNS = ['^vit-', 'lr3e-4', 's0[0-4]\\d\\d5$', '(bert|gpt)-lr1e-4', '^(resnet|mlp)-.*-s00[0-9]{3}$',
  '(?i)VIT.*S01', 'zzz', '7$'];

async function load(server) {
  // 8 runs × 50 metrics × steps: runs split between 2 connections, each run's steps in order.
  const t0 = performance.now();
  const chunk = 500;
  let points = 0;
  const lanes = [0, 1].map(async (lane) => {
    for (let ri = lane; ri < CFG.runs; ri += 2) {
      for (let s = 0; s < CFG.steps; s += chunk) {
        const r = await server.write(chartLines(ri, s, Math.min(CFG.steps, s + chunk)));
        points += r.points_accepted;
      }
    }
  });
  await Promise.all(lanes);
  const t1 = performance.now();
  console.log(`# wrote ${CFG.runs} runs × ${CFG.metrics} metrics × ${CFG.steps} steps = ${(points / 1e6).toFixed(2)}M points ` +
    `over HTTP NDJSON in ${((t1 - t0) / 1000).toFixed(1)} s (generation included)`);
  // Many runs: a few steps each, two metrics (the runs table's default columns).
  const lines = [];
  for (let i = 0; i < ARGS.manyRuns; i++) {
    for (let step = 0; step < 3; step++) {
      lines.push(`{"project":"many","run":"${manyRunId(i)}","step":${step},"time":${T0 + i + step},` +
        `"metrics":{"train/loss":${(2 - step * 0.1 + (i % 97) / 100).toFixed(3)},"val/loss":${(2.1 - step * 0.1).toFixed(3)}}}`);
    }
  }
  for (let i = 0; i < lines.length; i += 6000) await server.write(lines.slice(i, i + 6000).join('\n') + '\n');
  const t2 = performance.now();
  console.log(`# wrote ${ARGS.manyRuns} runs × 3 steps × 2 metrics in ${((t2 - t1) / 1000).toFixed(1)} s`);
  // The live probe's run.
  const probe = [];
  for (let step = 0; step < CFG.liveSteps; step++) {
    probe.push(`{"project":"live","run":"probe","step":${step},"time":${T0 + step},"metrics":{"probe/value":${Math.sin(step / 50).toFixed(4)}}}`);
  }
  await server.write(probe.join('\n') + '\n');
  const idle = await server.waitIdle();
  console.log(`# server idle after ${idle.toFixed(1)} s more`);
}

// ------------------------------------------------------------------------------------------------
// The page-side recorder (an init script): every animation frame's timestamp, long tasks, input
// event times, and per-frame hooks; optionally the navigation probe of figure 1.

function pageRecorder(cfg) {
  const S = (window.__twb = { frames: [], longtasks: [], ev: {}, hooks: new Set(), cfg, nav: null, errors: [] });
  // the app's per-stage User Timing measures (web/src/lib/trace.ts), read back by figure 1
  if (cfg && cfg.trace) window.__twTrace = true;
  try { performance.setResourceTimingBufferSize(5000); } catch { /* older API */ }
  try {
    new PerformanceObserver((l) => { for (const e of l.getEntries()) S.longtasks.push([e.startTime, e.duration]); })
      .observe({ type: 'longtask', buffered: true });
  } catch { /* unsupported */ }
  for (const type of ['mousedown', 'mouseup', 'dblclick']) {
    window.addEventListener(type, (e) => { S.ev[type] = e.timeStamp; }, true);
  }
  const tick = (t) => {
    S.frames.push(t);
    for (const h of [...S.hooks]) {
      try {
        if (h(t)) S.hooks.delete(h);
      } catch (e) {
        S.hooks.delete(h);
        S.errors.push(String(e && e.stack ? e.stack : e));
      }
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  /** Per frame until it returns a value: resolves with [value, frame time]. */
  S.until = (fn, timeoutMs = 20000) => new Promise((resolve) => {
    const start = performance.now();
    S.hooks.add((t) => {
      const v = fn(t);
      if (v) { resolve([v, t]); return true; }
      if (performance.now() - start > timeoutMs) { resolve([null, t]); return true; }
      return false;
    });
  });
  S.charts = () => [...document.querySelectorAll('[data-testid="chart"]')];
  S.done = (el, series, last) => el.dataset.series === String(series) && el.dataset.lastStep === String(last);
  S.inView = (el) => {
    const r = el.getBoundingClientRect();
    return r.bottom > 0 && r.top < innerHeight && r.height > 0;
  };
  if (cfg && cfg.nav) {
    const c = cfg.nav;
    S.nav = { firstScreen: null, firstScreenCharts: 0, all: null, allSeen: null, scrolls: 0, chartsAt: null };
    S.hooks.add((t) => {
      const els = S.charts();
      if (els.length < c.metrics) return false;
      if (S.nav.chartsAt === null) S.nav.chartsAt = t;
      let done = 0;
      let inView = 0;
      let inViewDone = 0;
      for (const el of els) {
        const ok = S.done(el, c.series, c.last);
        if (ok) done++;
        if (S.inView(el)) {
          inView++;
          if (ok) inViewDone++;
        }
      }
      if (S.nav.firstScreen === null && scrollY === 0 && inView > 0 && inView === inViewDone) {
        S.nav.firstScreen = t;
        S.nav.firstScreenCharts = inView;
      }
      if (done === els.length) {
        S.nav.all = t;
        S.nav.allSeen = performance.now(); // later than t, the frame's start: work of this frame began before
        return true;
      }
      if (c.scroll && S.nav.firstScreen !== null && inView === inViewDone &&
          scrollY + innerHeight < document.documentElement.scrollHeight - 1) {
        scrollBy(0, innerHeight);
        S.nav.scrolls++;
      }
      return false;
    });
  }
}

function frameDeltas(frames, from, to) {
  const out = [];
  for (let i = 1; i < frames.length; i++) {
    if (frames[i - 1] >= from && frames[i] <= to) out.push(frames[i] - frames[i - 1]);
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// Browser

let browser = null;
const pageErrors = [];

async function openPage(baseUrl, route, { viewport = { width: 1280, height: 800 }, recorder = {} } = {}) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.setDefaultTimeout(30000);
  page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(`console.error: ${m.text()}`); });
  page.on('pageerror', (e) => pageErrors.push(`uncaught: ${e && e.message}`));
  await page.addInitScript(pageRecorder, recorder);
  await page.goto(baseUrl + route);
  return { page, context, close: () => context.close().catch(() => {}) };
}

const scalarsRoute = `/#/scalars?runs=${RUN_IDS.map((r) => `${PROJECT}/${r}`).join(',')}`;

/** The app's traced stages (web/src/lib/trace.ts) of the navigations: per stage the median of one
 *  occurrence and, for the stages that run on the main thread one at a time, the p50 over
 *  navigations of their sum; then how far apart the charts were finished. */
const MAIN_THREAD_STAGES = new Set(['parse', 'shape', 'join', 'uplot-new', 'uplot-draw']);
const STAGE_MEANING = {
  queue: 'waiting for one of the 6 request slots', fetch: 'request sent → headers', body: 'headers → body read',
  parse: 'JSON.parse', shape: 'answer → per-run arrays', join: 'runs joined on one x axis, smoothing',
  'uplot-new': 'uPlot built', 'uplot-draw': 'uPlot draws: envelopes, axes, lines',
  answer: 'chart asks → its data shaped', chart: 'chart asks → drawn',
};
function printStages(rows) {
  const names = [...new Set(rows.flatMap((r) => r.stages.map(([n]) => n)))];
  if (!names.length) return;
  console.log('  app stages (web/src/lib/trace.ts); "main" = on the main thread, one at a time, so their sums add up:');
  for (const n of names) {
    const each = rows.flatMap((r) => r.stages.filter(([m]) => m === n).map(([, , d]) => d));
    const perNav = rows.map((r) => sum(r.stages.filter(([m]) => m === n).map(([, , d]) => d)));
    const main = MAIN_THREAD_STAGES.has(n);
    console.log(`    ${n.padEnd(11)}${main ? 'main' : '    '} n=${String(Math.round(each.length / rows.length)).padStart(3)}/nav  ` +
      `each p50 ${fmt(p(each, 0.5)).padStart(6)} ms, p90 ${fmt(p(each, 0.9)).padStart(6)} ms, max ${fmt(Math.max(...each)).padStart(6)} ms` +
      (main ? `; sum per navigation p50 ${fmt(p(perNav, 0.5), 0).padStart(4)} ms` : '') + `  (${STAGE_MEANING[n] ?? ''})`);
  }
  const gaps = rows.flatMap((r) => {
    const ends = r.stages.filter(([m]) => m === 'chart').map(([, t, d]) => t + d).sort((a, b) => a - b);
    return ends.slice(1).map((e, k) => e - ends[k]);
  });
  if (gaps.length) console.log(`    one chart drawn → the next: ${pct(gaps, [0.5, 0.9])}`);
}

// 1. Navigation → drawn
async function benchNavigation(server) {
  console.log(`\n## 1. navigation → ${CFG.metrics} charts × ${CFG.runs} runs drawn (${CFG.steps} steps each; ` +
    `"drawn" = every chart data-series=${CFG.runs} and data-last-step=${LAST}, at the frame that paints it)`);
  console.log(`route ${scalarsRoute.slice(0, 60)}…; a new browser context (empty cache) per navigation`);
  let tallHeight = 7000;
  const modes = [
    { name: 'scroll', label: 'viewport 1280×800, scrolled one screen on as soon as the charts in view are drawn', viewport: { width: 1280, height: 800 }, scroll: true },
    { name: 'tall', label: 'all 50 charts in one tall viewport', viewport: null, scroll: false },
  ];
  const results = {};
  for (const mode of modes) {
    const rows = [];
    const c0 = cpuMark(server);
    for (let i = 0; i <= CFG.navigations; i++) {
      const viewport = mode.viewport || { width: 1280, height: tallHeight };
      const h0 = await server.httpCounters();
      const s0 = procStat(server.proc.pid).cpu;
      const pg = await openPage(server.url, scalarsRoute, {
        viewport, recorder: { trace: true, nav: { metrics: CFG.metrics, series: CFG.runs, last: LAST, scroll: mode.scroll } },
      });
      await pg.page.waitForFunction(() => window.__twb.nav && window.__twb.nav.all !== null, null, { timeout: 60000, polling: 100 });
      const r = await pg.page.evaluate(() => {
        const S = window.__twb;
        const res = performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/'));
        const series = res.filter((e) => e.name.includes('/api/v1/series'));
        const navE = performance.getEntriesByType('navigation')[0];
        const lt = S.longtasks.filter(([s]) => s <= S.nav.all);
        return {
          ...S.nav,
          scrollHeight: document.documentElement.scrollHeight,
          dcl: navE ? navE.domContentLoadedEventEnd : NaN,
          api: res.length,
          series: series.length,
          seriesTtfb: series.map((e) => e.responseStart - e.requestStart),
          seriesQueued: series.map((e) => e.requestStart - e.startTime),
          seriesDl: series.map((e) => e.responseEnd - e.responseStart),
          seriesBusy: series.reduce((s, e) => s + e.responseEnd - e.startTime, 0),
          seriesFirst: Math.min(...series.map((e) => e.startTime)),
          seriesMaxInFlight: Math.max(0, ...series.map((e) => series.filter((o) => o.startTime <= e.startTime && o.responseEnd > e.startTime).length)),
          seriesBytes: series.reduce((s, e) => s + (e.encodedBodySize || 0), 0),
          lastSeriesEnd: Math.max(0, ...series.map((e) => e.responseEnd)),
          longtaskMs: lt.reduce((s, [, d]) => s + d, 0),
          longestTask: Math.max(0, ...lt.map(([, d]) => d)),
          maxFrame: Math.max(0, ...S.frames.slice(1).map((f, k) => f - S.frames[k]).filter((_, k) => S.frames[k + 1] <= S.nav.all)),
          stages: performance.getEntriesByType('measure').filter((m) => m.name.startsWith('tw:') && m.startTime <= S.nav.allSeen)
            .map((m) => [m.name.slice(3), m.startTime, m.duration]),
        };
      });
      const h1 = await server.httpCounters();
      r.serverReqs = h1.n - h0.n - 1; // less the /metrics call itself
      r.serverReqS = h1.s - h0.s;
      r.serverCpu = procStat(server.proc.pid).cpu - s0;
      await pg.close();
      if (mode.name === 'scroll' && i === 0) tallHeight = Math.min(16000, r.scrollHeight + 50);
      if (i === 0) {
        console.log(`[${mode.name}] warm-up navigation (not counted): all drawn at ${fmt(r.all, 0)} ms`);
        continue;
      }
      rows.push(r);
      console.log(`[${mode.name}] nav ${i}: app loaded (DOMContentLoaded) ${fmt(r.dcl, 0)} ms, charts mounted ${fmt(r.chartsAt, 0)}, ` +
        (mode.scroll ? `first screen (${r.firstScreenCharts} charts) ${fmt(r.firstScreen, 0)}, ` : '') +
        `all ${CFG.metrics} drawn ${fmt(r.all, 0)} ms` + (mode.scroll ? ` (${r.scrolls} scrolls)` : '') +
        `; ${r.series} series requests (${(r.seriesBytes / 1e6).toFixed(2)} MB), first sent ${fmt(r.seriesFirst, 0)} ms, last answered ${fmt(r.lastSeriesEnd, 0)} ms; ` +
        `server saw ${r.serverReqs} requests, ${(r.serverReqS * 1000).toFixed(0)} ms handling, ${r.serverCpu.toFixed(2)} CPU-s; ` +
        `long tasks ${r.longtaskMs.toFixed(0)} ms (longest ${r.longestTask.toFixed(0)}), longest frame ${r.maxFrame.toFixed(0)} ms`);
    }
    const c1 = cpuMark(server);
    console.log(`[${mode.name}] ${mode.label}${mode.viewport ? '' : ` (1280×${tallHeight})`}:`);
    if (mode.scroll) console.log(`  first screen drawn:       ${pct(rows.map((r) => r.firstScreen), [0.5, 0.9])}`);
    console.log(`  all ${CFG.metrics} charts drawn:     ${pct(rows.map((r) => r.all), [0.5, 0.9])}`);
    const ttfb = rows.flatMap((r) => r.seriesTtfb);
    const queued = rows.flatMap((r) => r.seriesQueued);
    console.log(`  series requests per navigation ${p(rows.map((r) => r.series), 0.5)}; ` +
      `request sent → first byte ${pct(ttfb, [0.5, 0.9, 0.99])}; first byte → last ${pct(rows.flatMap((r) => r.seriesDl), [0.5, 0.9])}; ` +
      `waiting for a connection before sending ${pct(queued, [0.5, 0.9])}`);
    console.log(`  series requests at most ${Math.max(...rows.map((r) => r.seriesMaxInFlight))} in flight (the app's limit is 6); ` +
      `first sent → last answered p50 ${fmt(p(rows.map((r) => r.lastSeriesEnd - r.seriesFirst), 0.5), 0)} ms, ` +
      `of which the requests were on the wire ${fmt(p(rows.map((r) => r.seriesBusy), 0.5) / 6, 0)} ms per slot (p50)`);
    console.log(`  server per navigation: ${p(rows.map((r) => r.serverReqs), 0.5)} requests, ` +
      `${fmt(p(rows.map((r) => r.serverReqS * 1000), 0.5), 0)} ms summed handling time, ${fmt(p(rows.map((r) => r.serverCpu), 0.5), 2)} CPU-s (p50)`);
    console.log(`  main-thread long tasks per navigation p50 ${fmt(p(rows.map((r) => r.longtaskMs), 0.5), 0)} ms`);
    printStages(rows);
    console.log(`  ${cpuLine(c0, c1)}`);
    results[mode.name] = rows;
  }
  const sc = results.scroll;
  const tall = results.tall;
  summary('navigation → first screen drawn (1280×800)',
    `p50 ${fmt(p(sc.map((r) => r.firstScreen), 0.5), 0)} ms, p90 ${fmt(p(sc.map((r) => r.firstScreen), 0.9), 0)} ms (${sc[0].firstScreenCharts} charts)`);
  summary('navigation → all 50 drawn, scrolling through (1280×800)',
    `p50 ${fmt(p(sc.map((r) => r.all), 0.5), 0)} ms, p90 ${fmt(p(sc.map((r) => r.all), 0.9), 0)} ms`);
  summary('navigation → all 50 drawn, one tall viewport',
    `p50 ${fmt(p(tall.map((r) => r.all), 0.5), 0)} ms, p90 ${fmt(p(tall.map((r) => r.all), 0.9), 0)} ms; ` +
    `${p(tall.map((r) => r.series), 0.5)} series requests, ${(p(tall.map((r) => r.seriesBytes), 0.5) / 1e6).toFixed(1)} MB of JSON, ` +
    `TTFB p50 ${fmt(p(tall.flatMap((r) => r.seriesTtfb), 0.5))} ms; main-thread long tasks p50 ${fmt(p(tall.map((r) => r.longtaskMs), 0.5), 0)} ms`);
}

// 2. Zoom
async function benchZoom(server) {
  console.log(`\n## 2. drag-zoom on a chart (1280×800): ${CFG.zoomCycles} × (zoom, zoom inside it, double-click reset); ` +
    'every chart in view refetches its range (the app has drag-zoom only, no wheel zoom)');
  const pg = await openPage(server.url, scalarsRoute, {
    recorder: { nav: { metrics: CFG.metrics, series: CFG.runs, last: LAST, scroll: false } },
  });
  const { page } = pg;
  await page.waitForFunction(() => window.__twb.nav && window.__twb.nav.firstScreen !== null, null, { timeout: 60000, polling: 100 });
  await sleep(300);
  const over = page.locator('[data-testid="chart"]').first().locator('.u-over');
  const c0 = cpuMark(server);
  const redraw = [];
  const dragWindows = [];
  const redrawWindows = [];
  const waitDrawn = (zoomed, after) => page.evaluate(async ({ zoomed, after, series, last }) => {
    const S = window.__twb;
    const [v, t] = await S.until(() => {
      const q = new URLSearchParams(location.hash.split('?')[1] || '');
      const to = Number(q.get('to'));
      if (zoomed !== q.has('to')) return null;
      const expect = zoomed ? Math.min(last, Math.floor(to)) : last;
      const els = S.charts().filter(S.inView);
      return els.length && els.every((el) => S.done(el, series, expect)) ? { expect, charts: els.length } : null;
    });
    const start = S.ev[after];
    return v ? { ms: t - start, start, end: t, ...v } : null;
  }, { zoomed, after, series: CFG.runs, last: LAST });
  for (let c = 0; c < CFG.zoomCycles; c++) {
    for (const [k, [a, b]] of [[0.15 + 0.03 * c, 0.6 - 0.02 * c], [0.25, 0.7]].entries()) {
      const box = await over.boundingBox();
      const y = box.y + box.height / 2;
      await page.mouse.move(box.x + box.width * a, y);
      await page.mouse.down();
      await page.mouse.move(box.x + box.width * b, y, { steps: 12 });
      await page.mouse.up();
      const r = await waitDrawn(true, 'mouseup');
      if (!r) throw new Error(`zoom ${c}.${k}: charts in view not redrawn within 20 s`);
      const down = await page.evaluate(() => window.__twb.ev.mousedown);
      dragWindows.push([down, r.start]);
      redrawWindows.push([r.start, r.end]);
      redraw.push(r.ms);
      console.log(`zoom ${c + 1}.${k + 1}: to step ${r.expect}: ${r.charts} charts in view redrawn ${r.ms.toFixed(0)} ms after mouse-up`);
    }
    const box = await over.boundingBox();
    await page.mouse.dblclick(box.x + box.width / 2, box.y + box.height / 2);
    const r = await waitDrawn(false, 'dblclick');
    if (!r) throw new Error(`reset ${c}: charts in view not redrawn within 20 s`);
    redrawWindows.push([r.start, r.end]);
    redraw.push(r.ms);
    console.log(`reset ${c + 1}: ${r.charts} charts redrawn ${r.ms.toFixed(0)} ms after the double-click`);
    await page.mouse.move(box.x + box.width / 2, box.y + box.height + 40); // leave the chart: no tooltip
    await sleep(150);
  }
  const { frames, longtasks } = await page.evaluate(() => ({ frames: window.__twb.frames, longtasks: window.__twb.longtasks }));
  const c1 = cpuMark(server);
  await pg.close();
  const dragF = dragWindows.flatMap(([a, b]) => frameDeltas(frames, a, b));
  const redrawF = redrawWindows.flatMap(([a, b]) => frameDeltas(frames, a, b));
  const allF = frameDeltas(frames, Math.min(...dragWindows.map((w) => w[0])), Math.max(...redrawWindows.map((w) => w[1])));
  const lt = longtasks.filter(([s]) => s >= dragWindows[0][0]);
  console.log(`mouse-up / double-click → every chart in view redrawn: ${pct(redraw, [0.5, 0.9])}`);
  console.log(`frame time while dragging the selection:      ${pct(dragF, [0.5, 0.99])}`);
  console.log(`frame time while the refetched data is drawn: ${pct(redrawF, [0.5, 0.99])}`);
  console.log(`frame time over the whole phase:               ${pct(allF, [0.5, 0.99])}; ` +
    `long tasks ${lt.length}, ${sum(lt.map((x) => x[1])).toFixed(0)} ms in all`);
  console.log(cpuLine(c0, c1));
  summary('zoom: mouse-up → every chart in view redrawn', `p50 ${fmt(p(redraw, 0.5), 0)} ms, p90 ${fmt(p(redraw, 0.9), 0)} ms`);
  summary('zoom: frame time (dragging / redrawing)',
    `p50 ${fmt(p(dragF, 0.5))}/${fmt(p(redrawF, 0.5))} ms, p99 ${fmt(p(dragF, 0.99))}/${fmt(p(redrawF, 0.99))} ms, ` +
    `max ${fmt(Math.max(...dragF))}/${fmt(Math.max(...redrawF))} ms`);
}

// 3. Runs table
async function benchRuns(server) {
  const all = [];
  for (let offset = 0; ; ) {
    const r = JSON.parse((await server.request('GET', `/api/v1/runs?limit=10000&offset=${offset}`)).text);
    all.push(...r.runs);
    offset += r.runs.length;
    if (!r.runs.length || offset >= r.total) break;
  }
  const total = all.length;
  const expectedOf = (pattern) => {
    let src = pattern;
    let flags = '';
    if (src.startsWith('(?i)')) { src = src.slice(4); flags = 'i'; }
    const re = new RegExp(src, flags);
    return all.filter((r) => re.test(r.name) || re.test(r.id)).length;
  };
  console.log(`\n## 3. runs table with ${total} runs (1280×800): regex into runs-search → runs-count right, at the frame that paints it`);
  const c0 = cpuMark(server);
  const pg = await openPage(server.url, '/#/runs');
  const { page } = pg;
  const [, loaded] = await page.evaluate(async (total) => window.__twb.until(() => {
    const el = document.querySelector('[data-testid="runs-count"]');
    return el && el.textContent.trim() === String(total);
  }, 60000), total);
  console.log(`navigation → runs-count shows ${total}: ${loaded.toFixed(0)} ms`);
  const filterMs = [];
  const clearMs = [];
  const setSearch = (pattern, expected) => page.evaluate(async ({ pattern, expected }) => {
    const S = window.__twb;
    const input = document.querySelector('[data-testid="runs-search"]');
    await new Promise((r) => requestAnimationFrame(r));
    const t0 = performance.now();
    input.value = pattern;
    input.dispatchEvent(new Event('input', { bubbles: true }));
    const [v, t] = await S.until(() => {
      const el = document.querySelector('[data-testid="runs-count"]');
      return el && el.textContent.trim() === String(expected);
    });
    return v ? { ms: t - t0, rows: document.querySelectorAll('[data-testid="runs-row"]').length } : null;
  }, { pattern, expected });
  for (const pattern of PATTERNS.slice(0, CFG.patternsUsed)) {
    const expected = expectedOf(pattern);
    const r = await setSearch(pattern, expected);
    if (!r) throw new Error(`runs-count never showed ${expected} for /${pattern}/`);
    filterMs.push(r.ms);
    const c = await setSearch('', total);
    if (!c) throw new Error(`runs-count never came back to ${total}`);
    clearMs.push(c.ms);
    console.log(`/${pattern}/ → ${expected} runs (${r.rows} rows rendered): ${r.ms.toFixed(1)} ms; cleared → ${total}: ${c.ms.toFixed(1)} ms`);
  }
  // Scroll the virtualised table: 600 px (~18 rows) per frame, from the top, wrapping at the bottom.
  const sc = await page.evaluate(async (ms) => {
    const S = window.__twb;
    const el = document.querySelector('.tbody');
    el.scrollTop = 0;
    await new Promise((r) => requestAnimationFrame(r));
    const t0 = performance.now();
    let moved = 0;
    let gaps = 0;
    let framesN = 0;
    await S.until((t) => {
      // rows rendered around the position painted in this frame (the app re-renders on 'scroll')
      const rows = el.querySelectorAll('[data-testid="runs-row"]');
      const box = el.getBoundingClientRect();
      let top = Infinity;
      let bottom = -Infinity;
      for (const row of rows) {
        const r = row.getBoundingClientRect();
        top = Math.min(top, r.top);
        bottom = Math.max(bottom, r.bottom);
      }
      if (!(top <= box.top + 1 && bottom >= box.bottom - 1)) gaps++;
      framesN++;
      if (t - t0 > ms) return true;
      if (el.scrollTop + el.clientHeight >= el.scrollHeight - 1) el.scrollTop = 0;
      else el.scrollTop += 600;
      moved += 600;
      return false;
    }, ms + 5000);
    return { t0, t1: performance.now(), moved, gaps, framesN, frames: S.frames, longtasks: S.longtasks };
  }, CFG.scrollMs);
  const c1 = cpuMark(server);
  await pg.close();
  const sf = frameDeltas(sc.frames, sc.t0, sc.t1);
  const lt = sc.longtasks.filter(([s]) => s >= sc.t0 && s <= sc.t1);
  console.log(`regex typed → runs-count right: ${pct(filterMs, [0.5, 0.9])}`);
  console.log(`search cleared → all ${total} again:  ${pct(clearMs, [0.5, 0.9])}`);
  console.log(`frame time scrolling the table (600 px per frame, ${(sc.moved / 34).toFixed(0)} rows passed): ${pct(sf, [0.5, 0.99])}; ` +
    `frames with the view not fully covered by rows ${sc.gaps}/${sc.framesN}; long tasks ${lt.length}`);
  console.log(cpuLine(c0, c1));
  summary(`runs page: navigation → ${total} runs listed`, `${loaded.toFixed(0)} ms`);
  summary(`regex filter of ${total} runs → runs-count right`, `p50 ${fmt(p(filterMs, 0.5))} ms, p90 ${fmt(p(filterMs, 0.9))} ms (clearing: p50 ${fmt(p(clearMs, 0.5))} ms)`);
  summary('frame time scrolling the virtualised table', `p50 ${fmt(p(sf, 0.5))} ms, p99 ${fmt(p(sf, 0.99))} ms, max ${fmt(Math.max(...sf))} ms`);
}

// 4. Live point → pixel
async function benchLive(server) {
  console.log(`\n## 4. live point: write at a new step (POST /api/v1/write from the page) → the chart shows it; ${CFG.liveWrites} writes, one at a time`);
  const pg = await openPage(server.url, '/#/scalars?runs=live/probe');
  const { page } = pg;
  await page.evaluate(async (last) => window.__twb.until(() => {
    const el = document.querySelector('[data-testid="chart"]');
    const live = document.querySelector('[data-testid="live-status"]');
    return el && el.dataset.lastStep === String(last) && live && live.textContent.trim() === 'live';
  }, 30000), CFG.liveSteps - 1);
  await sleep(500);
  const c0 = cpuMark(server);
  const ack = [];
  const attr = [];
  const pix = [];
  let missed = 0;
  for (let i = 0; i < CFG.liveWrites; i++) {
    const step = CFG.liveSteps + i;
    const r = await page.evaluate(async ({ step, time, value }) => {
      const S = window.__twb;
      const chart = document.querySelector('[data-testid="chart"]');
      const canvas = chart.querySelector('canvas');
      const g = canvas.getContext('2d');
      const sig = () => {
        const d = g.getImageData(0, 0, canvas.width, canvas.height).data;
        let h = 0;
        for (let k = 0; k < d.length; k += 4) h = (Math.imul(h, 31) + (d[k] | (d[k + 1] << 8) | (d[k + 2] << 16))) | 0;
        return h;
      };
      const base = sig();
      await new Promise((res) => requestAnimationFrame(res));
      const body = JSON.stringify({ project: 'live', run: 'probe', step, time, metrics: { 'probe/value': value } }) + '\n';
      const t0 = performance.now();
      let tAck = null;
      let ok = false;
      fetch('/api/v1/write', { method: 'POST', headers: { 'Content-Type': 'application/x-ndjson' }, body })
        .then((x) => x.json()).then((j) => { ok = j.points_accepted === 1; tAck = performance.now(); });
      let tAttr = null;
      let tPix = null;
      await S.until((t) => {
        if (tAttr === null && chart.dataset.lastStep === String(step)) tAttr = t;
        if (tPix === null && sig() !== base) tPix = t;
        return tAttr !== null && tPix !== null && tAck !== null;
      }, 5000);
      return { ok, ack: tAck - t0, attr: tAttr === null ? null : tAttr - t0, pix: tPix === null ? null : tPix - t0 };
    }, { step, time: T0 + step, value: i % 2 ? 2.5 : -2.5 });
    if (!r.ok || r.attr === null) missed++;
    ack.push(r.ack);
    if (r.attr !== null) attr.push(r.attr);
    if (r.pix !== null) pix.push(r.pix);
    await sleep(60 + (i * 37) % 90);
  }
  const c1 = cpuMark(server);
  await pg.close();
  console.log(`write → data-last-step shows the step: ${pct(attr, [0.5, 0.99])}`);
  console.log(`write → canvas pixels changed:         ${pct(pix, [0.5, 0.99])}`);
  console.log(`the write's own ack (durable):         ${pct(ack, [0.5, 0.99])}` + (missed ? `; ${missed} writes never shown in 5 s` : ''));
  console.log(cpuLine(c0, c1));
  summary('live point: write → chart shows it (attribute / pixels)',
    `p50 ${fmt(p(attr, 0.5), 0)}/${fmt(p(pix, 0.5), 0)} ms, p99 ${fmt(p(attr, 0.99), 0)}/${fmt(p(pix, 0.99), 0)} ms; write ack p50 ${fmt(p(ack, 0.5))} ms, p99 ${fmt(p(ack, 0.99))} ms`);
}

// ------------------------------------------------------------------------------------------------

async function main() {
  const bin = path.join(ARGS.buildDir, 'bin', 'trainwatch');
  if (!fs.existsSync(bin)) {
    console.error(`trainwatch not found at ${bin}: build it first`);
    process.exit(1);
  }
  if (!fs.existsSync(CHROMIUM)) {
    console.error(`no Chromium at ${CHROMIUM} (scripts/install-deps.sh installs Debian's; or set CHROMIUM)`);
    process.exit(1);
  }
  const started = performance.now();
  console.log(`dashboard benchmark${Q ? ' (--quick)' : ''}: ${new Date().toISOString()}, ${os.cpus().length} CPUs, ` +
    `${bin}, ${CHROMIUM} headless`);
  const server = new Server();
  const dataDir = path.join(ARGS.workDir, 'scratch', 'dashboard', 'data');
  await server.start(bin, dataDir);
  let failed = null;
  try {
    const index = await server.request('GET', '/');
    if (index.status !== 200 || !/<div id="app"|<!doctype html/i.test(index.text)) {
      throw new Error(`GET / answered ${index.status}: ${bin} does not serve the dashboard`);
    }
    console.log(`# server ${server.url}, data in ${dataDir}`);
    await load(server);
    const args = ARGS.omniboxPopup ? CHROMIUM_ARGS : [...CHROMIUM_ARGS, NO_OMNIBOX_POPUP];
    browser = await chromium.launch({ executablePath: CHROMIUM, args, headless: true });
    console.log(`# Chromium ${browser.version()}${ARGS.omniboxPopup ? ' (with its omnibox popup WebUI per window)' : ''}`);
    if (ARGS.only.includes('nav')) await benchNavigation(server);
    if (ARGS.only.includes('zoom')) await benchZoom(server);
    if (ARGS.only.includes('runs')) await benchRuns(server);
    if (ARGS.only.includes('live')) await benchLive(server);
  } catch (e) {
    failed = e;
  } finally {
    if (browser) await browser.close().catch(() => {});
    await server.stop();
  }
  if (pageErrors.length) {
    console.log(`\n# ${pageErrors.length} console errors / uncaught exceptions in the pages, e.g.:`);
    for (const e of [...new Set(pageErrors)].slice(0, 5)) console.log(`#   ${e}`);
  }
  if (failed) {
    console.error(`\ndashboard benchmark failed: ${failed.stack || failed}`);
    console.error(`server log: ${server.logPath}`);
    process.exit(1);
  }
  console.log('\n## summary\n\n| figure | measured |\n|---|---|');
  for (const [f, m] of SUMMARY) console.log(`| ${f} | ${m} |`);
  console.log(`\n# ${((performance.now() - started) / 1000).toFixed(0)} s in all`);
}

main();
