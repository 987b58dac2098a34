// Browser-test harness for the dashboard (docs/design/dashboard.md).
//
// A suite starts one real `trainwatch serve` process (TRAINWATCH_BIN, default build/bin/trainwatch)
// on 127.0.0.1 ports it binds itself (port 0, read back from the line it prints) with a temporary
// data directory, writes data through the HTTP API, and drives Debian's Chromium with playwright-core.
// Every page a test opens records its console errors and uncaught exceptions (the test fails on any)
// and is screenshotted into TRAINWATCH_ARTIFACTS (default build/test-artifacts/browser/) when the test
// ends, pass or fail. On a failure the server's stderr tail and the pages' errors are printed.
// Everything is torn down in `after`.
//
// Environment:
//   TRAINWATCH_BIN        the server binary
//   TRAINWATCH_ARTIFACTS  where screenshots go
//   CHROMIUM              the browser (default /usr/bin/chromium)
//   TRAINWATCH_WEB_DIST   development only: serve this built app (web/dist) from a small Node proxy
//                         in front of the API, for a server binary that does not embed the app yet
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { after, before, test } from 'node:test';
import { chromium } from 'playwright-core';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = process.env.TRAINWATCH_BIN || path.join(REPO, 'build', 'bin', 'trainwatch');
export const ARTIFACTS =
  process.env.TRAINWATCH_ARTIFACTS || path.join(REPO, 'build', 'test-artifacts', 'browser');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--no-first-run',
  // headless Chromium 156 otherwise opens its omnibox popup WebUI (a renderer of its own, ~1 CPU-s)
  // with every new browser context, i.e. every page a test opens
  '--disable-features=WebUIOmniboxPopup,WebUIOmniboxFullPopup,WebUIOmniboxAimPopup',
];

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Starts `server` (a node:http or node:net server) on 127.0.0.1, port 0; resolves to the bound port. */
export function listenOnFreePort(server) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server.address().port));
  });
}

// tools/trainwatch_main.cc prints this line (and flushes it) once both listeners are bound.
const SERVING_LINE = /^trainwatch is serving (https?):\/\/\S+:(\d+) \(gRPC(?: over TLS)? \S+:(\d+), /m;

/** Calls fn until it returns a truthy value (returned) or `timeout` ms pass (throws with `what`
 *  and the last value or error seen). */
export async function poll(fn, { timeout = 5000, interval = 50, what = 'the condition' } = {}) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      const detail = last instanceof Error ? last.message : JSON.stringify(last);
      throw new Error(`timed out after ${timeout} ms waiting for ${what} (last: ${detail})`);
    }
    await sleep(interval);
  }
}

/** NDJSON for /api/v1/write: non-finite numbers become the bare tokens NaN/Infinity/-Infinity. */
export function ndjson(records) {
  const mark = (k, v) => (typeof v === 'number' && !Number.isFinite(v) ? `\u0000${v}\u0000` : v);
  return records
    .map((r) => (typeof r === 'string' ? r : JSON.stringify(r, mark)
      .replace(/"\\u0000(NaN|Infinity|-Infinity)\\u0000"/g, '$1')))
    .join('\n') + '\n';
}

// The Python harness turns a WriteRequest's proto3 JSON into bytes with the classes protoc generates
// from proto/trainwatch/v1/ingest.proto (tests/harness/ingest_pb.py): the one protobuf encoder of
// the tests, so the browser tests need none of their own.
const ENCODE_WRITE_REQUEST = `
import json, sys
sys.path.insert(0, sys.argv[1])
from google.protobuf import json_format
from harness import ingest_pb
request = json_format.ParseDict(json.load(sys.stdin), ingest_pb.load().WriteRequest())
sys.stdout.buffer.write(request.SerializeToString())
`;

/**
 * The protobuf body (`Content-Type: application/x-protobuf`) of a WriteRequest of one RunBatch:
 * { project, run, histograms?: [{name, step, time, edges, counts}], images?: [{name, step, time,
 * index, data (Buffer), caption}], texts?: [{name, step, time, value}] }. Histograms, images and
 * texts can be written only as protobuf; points are simpler as JSON lines (ndjson).
 */
export function writeRequest(batch) {
  const images = (batch.images ?? []).map((m) => ({ ...m, data: Buffer.from(m.data).toString('base64') }));
  const json = JSON.stringify({ runs: [{ ...batch, ...(batch.images ? { images } : {}) }] });
  const python = process.env.PYTHON || '/usr/bin/python3';
  const done = spawnSync(python, ['-c', ENCODE_WRITE_REQUEST, path.join(REPO, 'tests')], { input: json });
  if (done.error || done.status !== 0) {
    throw new Error(`encoding a WriteRequest with ${python} and tests/harness/ingest_pb.py failed: ` +
      `${done.error ?? done.stderr.toString()}`);
  }
  return done.stdout;
}

// ------------------------------------------------------------------------------------------------
// The server process

export class Server {
  constructor({ alerting = null, args = [] } = {}) {
    this.alerting = alerting; // YAML text of an --alerting file, or null
    this.args = args;
    this.proc = null;
    this.exit = null;
  }

  get url() { return `http://127.0.0.1:${this.port}`; }

  async start(timeoutMs = 20000) {
    if (!fs.existsSync(BIN)) {
      throw new Error(`no trainwatch binary at ${BIN} (build it, or set TRAINWATCH_BIN)`);
    }
    this.dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'tw-browser-'));
    const args = ['serve', '--data-dir', path.join(this.dir, 'data')];
    if (this.alerting !== null) {
      const file = path.join(this.dir, 'alerts.yml');
      await fsp.writeFile(file, this.alerting);
      args.push('--alerting', file);
    }
    // Port 0 for both listeners: the server binds free ports itself and prints them (waitServing).
    const deadline = Date.now() + timeoutMs;
    this.stderrPath = path.join(this.dir, 'stderr.log');
    this.stdoutPath = path.join(this.dir, 'stdout.log');
    const err = fs.openSync(this.stderrPath, 'w');
    this.exit = null;
    this.port = null;
    this.grpcPort = null;
    this.proc = spawn(BIN, [...args, '--listen', '127.0.0.1:0', '--grpc-listen', '127.0.0.1:0', ...this.args],
      { stdio: ['ignore', 'pipe', err] });
    fs.closeSync(err);
    const proc = this.proc;
    // stdout is read as it comes (and kept in stdout.log): the serving line is an event, not a poll.
    const stdoutFile = fs.createWriteStream(this.stdoutPath);
    let stdoutText = '';
    this.serving = new Promise((resolve) => {
      proc.stdout.on('data', (chunk) => {
        stdoutFile.write(chunk);
        if (this.port) return;
        stdoutText += chunk.toString('utf8');
        const m = SERVING_LINE.exec(stdoutText);
        if (m) {
          this.port = Number(m[2]);
          this.grpcPort = Number(m[3]);
          resolve(true);
        }
      });
      proc.stdout.on('end', () => { stdoutFile.end(); resolve(Boolean(this.port)); });
    });
    this.exited = new Promise((resolve) => proc.on('exit', (code, sig) => {
      this.exit = { code, sig };
      resolve(this.exit);
    }));
    proc.on('error', (e) => { this.exit = { code: null, sig: null, error: e }; });
    if (await this.waitServing(deadline) && await this.waitHealthy(deadline)) return this;
    await this.stop();
    throw new Error(`trainwatch did not come up (exit ${JSON.stringify(this.exit)}):\n${this.tail()}`);
  }

  /** Waits for the line naming the bound ports on the server's stdout (sets port and grpcPort), or
   * for its exit; the deadline only guards against a hang. */
  async waitServing(deadline) {
    let timer;
    const hang = new Promise((resolve) => { timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now())); });
    try {
      return await Promise.race([this.serving, this.exited.then(() => false), hang]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Asks /healthz once: the server prints its serving line only once it listens and is ready. */
  async waitHealthy(deadline) {
    if (this.exit) return false;
    try {
      const r = await fetch(`${this.url}/healthz`, { signal: AbortSignal.timeout(Math.max(1000, deadline - Date.now())) });
      return r.status === 200;
    } catch {
      return false;
    }
  }

  async stop() {
    const proc = this.proc;
    if (!proc || this.exit) return;
    proc.kill('SIGTERM');
    const t = setTimeout(() => proc.kill('SIGKILL'), 10000);
    await this.exited;
    clearTimeout(t);
  }

  async cleanup() {
    if (this.dir) await fsp.rm(this.dir, { recursive: true, force: true });
  }

  stderr() {
    try { return fs.readFileSync(this.stderrPath, 'utf8'); } catch { return ''; }
  }

  tail(lines = 40) {
    const text = this.stderr().split('\n');
    return `--- trainwatch stderr (last ${lines} lines, ${this.stderrPath})\n` +
      text.slice(-lines - 1).join('\n');
  }

  async request(method, p, body, headers = {}) {
    const r = await fetch(this.url + p, { method, body, headers });
    const text = await r.text();
    return { status: r.status, text };
  }

  async getJson(p) {
    const r = await this.request('GET', p);
    if (r.status !== 200) throw new Error(`GET ${p}: ${r.status} ${r.text}`);
    return JSON.parse(r.text);
  }

  /** POST /api/v1/write with NDJSON lines (objects or strings); throws unless every line is accepted. */
  async write(records) {
    const r = await this.request('POST', '/api/v1/write', ndjson(records),
      { 'Content-Type': 'application/x-ndjson' });
    const reply = r.status === 200 ? JSON.parse(r.text) : null;
    if (!reply || reply.lines_rejected) throw new Error(`write: ${r.status} ${r.text}`);
    return reply;
  }
}

// ------------------------------------------------------------------------------------------------
// Development only: the built app from a directory, the API proxied to the server (HTTP + WebSocket)

const MIME = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.css': 'text/css', '.svg': 'image/svg+xml', '.png': 'image/png', '.ico': 'image/x-icon',
  '.json': 'application/json', '.woff2': 'font/woff2', '.map': 'application/json',
};

async function startDistProxy(dist, target) {
  const upstream = { host: '127.0.0.1', port: target.port };
  const isApi = (u) => u.startsWith('/api/') || u === '/healthz' || u.startsWith('/healthz?');
  const srv = http.createServer((req, res) => {
    if (isApi(req.url)) {
      const up = http.request({ ...upstream, method: req.method, path: req.url, headers: req.headers },
        (ur) => { res.writeHead(ur.statusCode, ur.headers); ur.pipe(res); });
      up.on('error', () => { res.writeHead(502); res.end(); });
      req.pipe(up);
      return;
    }
    const rel = decodeURIComponent(req.url.split('?')[0]);
    let file = path.join(dist, path.normalize(rel));
    if (!file.startsWith(dist) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
      file = path.join(dist, 'index.html');
    }
    res.writeHead(200, { 'Content-Type': MIME[path.extname(file)] || 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  srv.on('upgrade', (req, socket, head) => {
    const up = net.connect(upstream.port, upstream.host, () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      up.write(lines.join('\r\n') + '\r\n\r\n');
      if (head.length) up.write(head);
      up.pipe(socket);
      socket.pipe(up);
    });
    const end = () => { up.destroy(); socket.destroy(); };
    up.on('error', end);
    socket.on('error', end);
  });
  const sockets = new Set();
  srv.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  const port = await listenOnFreePort(srv);
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((r) => { for (const s of sockets) s.destroy(); srv.close(r); }),
  };
}

// ------------------------------------------------------------------------------------------------
// PNG decoding (Playwright screenshots: 8-bit, non-interlaced) for pixel checks

export function decodePng(buf) {
  if (buf.readUInt32BE(0) !== 0x89504e47) throw new Error('not a PNG');
  let off = 8;
  let width = 0;
  let height = 0;
  let colorType = 0;
  const idat = [];
  while (off < buf.length) {
    const len = buf.readUInt32BE(off);
    const type = buf.toString('ascii', off + 4, off + 8);
    const data = buf.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      colorType = data[9];
      if (data[8] !== 8 || data[12] !== 0) throw new Error('unsupported PNG (bit depth/interlace)');
    } else if (type === 'IDAT') {
      idat.push(data);
    } else if (type === 'IEND') {
      break;
    }
    off += 12 + len;
  }
  const channels = { 0: 1, 2: 3, 4: 2, 6: 4 }[colorType];
  if (!channels) throw new Error(`unsupported PNG color type ${colorType}`);
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = Buffer.alloc(width * height * 4);
  let prev = Buffer.alloc(stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = Buffer.from(raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1)));
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? line[i - channels] : 0;
      const b = prev[i];
      const c = i >= channels ? prev[i - channels] : 0;
      let p = 0;
      if (filter === 1) p = a;
      else if (filter === 2) p = b;
      else if (filter === 3) p = (a + b) >> 1;
      else if (filter === 4) {
        const pa = Math.abs(b - c);
        const pb = Math.abs(a - c);
        const pc = Math.abs(a + b - 2 * c);
        p = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      line[i] = (line[i] + p) & 0xff;
    }
    for (let x = 0; x < width; x++) {
      const s = x * channels;
      const d = (y * width + x) * 4;
      if (channels <= 2) {
        out[d] = out[d + 1] = out[d + 2] = line[s];
        out[d + 3] = channels === 2 ? line[s + 1] : 255;
      } else {
        out[d] = line[s];
        out[d + 1] = line[s + 1];
        out[d + 2] = line[s + 2];
        out[d + 3] = channels === 4 ? line[s + 3] : 255;
      }
    }
    prev = line;
  }
  return { width, height, data: out };
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** An RGB PNG of width × height whose pixel (x, y) is rgb(x, y) → [r, g, b] (images to write). */
export function encodePng(width, height, rgb) {
  const raw = Buffer.alloc(height * (1 + 3 * width));
  for (let y = 0; y < height; y++) {
    raw[y * (1 + 3 * width)] = 0; // filter: none
    for (let x = 0; x < width; x++) {
      const [r, g, b] = rgb(x, y);
      raw.set([r, g, b], y * (1 + 3 * width) + 1 + 3 * x);
    }
  }
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, no interlace
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr), chunk('IDAT', zlib.deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

/** The mean colour of a screenshot: [r, g, b]. */
export function meanColor(png) {
  const { data } = decodePng(png);
  const sum = [0, 0, 0];
  for (let i = 0; i < data.length; i += 4) for (let k = 0; k < 3; k++) sum[k] += data[i + k];
  const n = data.length / 4;
  return sum.map((v) => Math.round(v / n));
}

/** For each pixel column of a screenshot, the row of its topmost clearly coloured pixel (chroma
 *  > 40, as inkStats counts), or Infinity for a column without one. */
export function columnTops(png) {
  const { width, height, data } = decodePng(png);
  const tops = new Array(width).fill(Infinity);
  for (let y = height - 1; y >= 0; y--) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4;
      if (Math.max(data[i], data[i + 1], data[i + 2]) - Math.min(data[i], data[i + 1], data[i + 2]) > 40) tops[x] = y;
    }
  }
  return tops;
}

/** Pixel statistics of a screenshot against its background (the most common colour):
 *  `ink` pixels differ from it, `colored` ones of those are clearly not grey (chroma > 40). */
export function inkStats(png) {
  const { width, height, data } = decodePng(png);
  const counts = new Map();
  for (let i = 0; i < data.length; i += 4) {
    const key = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  let bg = 0;
  let best = -1;
  for (const [k, n] of counts) if (n > best) { best = n; bg = k; }
  const br = bg >> 16;
  const bgG = (bg >> 8) & 0xff;
  const bb = bg & 0xff;
  let ink = 0;
  let colored = 0;
  for (let i = 0; i < data.length; i += 4) {
    const r = data[i];
    const g = data[i + 1];
    const b = data[i + 2];
    if (Math.abs(r - br) + Math.abs(g - bgG) + Math.abs(b - bb) > 48) {
      ink++;
      if (Math.max(r, g, b) - Math.min(r, g, b) > 40) colored++;
    }
  }
  return { width, height, pixels: width * height, background: `rgb(${br},${bgG},${bb})`, ink, colored };
}

/** Number of pixels that differ between two screenshots (all of them when the sizes differ). */
export function pixelDiff(a, b) {
  const A = decodePng(a);
  const B = decodePng(b);
  if (A.width !== B.width || A.height !== B.height) return Math.max(A.width * A.height, B.width * B.height);
  let n = 0;
  for (let i = 0; i < A.data.length; i += 4) {
    if (A.data[i] !== B.data[i] || A.data[i + 1] !== B.data[i + 1] || A.data[i + 2] !== B.data[i + 2]) n++;
  }
  return n;
}

// ------------------------------------------------------------------------------------------------
// The suite: server + browser, and a `test` whose pages are checked, screenshotted and closed

function slug(s) {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 80);
}

/**
 * Registers before/after hooks for one server and one browser; returns the suite:
 *   suite.server         the Server (write data in `setup`, or later through suite.server.write)
 *   suite.baseUrl        where the app is served
 *   suite.errors         every console error / page error of every page so far
 *   suite.test(name, fn) a node:test test; fn(ctx) with ctx.open(route) → a Playwright page
 */
export function browserSuite({ alerting = null, serverArgs = [], setup = async () => {} } = {}) {
  const suite = { server: new Server({ alerting, args: serverArgs }), errors: [], baseUrl: null };
  let browser = null;
  let proxy = null;

  before(async () => {
    await fsp.mkdir(ARTIFACTS, { recursive: true });
    try {
      await suite.server.start();
      suite.baseUrl = suite.server.url;
      if (process.env.TRAINWATCH_WEB_DIST) {
        proxy = await startDistProxy(path.resolve(process.env.TRAINWATCH_WEB_DIST), suite.server);
        suite.baseUrl = proxy.url;
      }
      // The app must be there at all (GET / → index.html); otherwise every test would just time out.
      const index = await fetch(suite.baseUrl + '/');
      const type = index.headers.get('content-type') || '';
      if (index.status !== 200 || !type.startsWith('text/html')) {
        throw new Error(`GET ${suite.baseUrl}/ answered ${index.status} ${type}, not the app's index.html: ` +
          `${BIN} does not serve the dashboard (a build without the embedded web app?)`);
      }
      await setup(suite.server);
      browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    } catch (e) {
      if (suite.server.stderrPath) console.error(suite.server.tail());
      throw e;
    }
  });

  after(async () => {
    if (browser) await browser.close().catch(() => {});
    if (proxy) await proxy.close();
    await suite.server.stop();
    await suite.server.cleanup();
  });

  suite.test = (name, fn, { timeout = 30000 } = {}) => test(name, { timeout }, async () => {
    const opened = []; // { page, context, errors, label }
    const ctx = {
      suite,
      server: suite.server,
      /** A fresh browser context and page at `route` (a path like "/#/runs"); `init` runs in the
       *  page before the app (Playwright's addInitScript), e.g. to put a key in localStorage. */
      async open(route, { viewport = { width: 1280, height: 800 }, init = null, initArg = undefined } = {}) {
        if (!browser) throw new Error('the browser did not start (see the before hook)');
        const context = await browser.newContext({ viewport });
        const page = await context.newPage();
        page.setDefaultTimeout(10000);
        const entry = { page, context, errors: [], label: `${slug(name)}-${opened.length + 1}` };
        opened.push(entry);
        page.on('console', (m) => {
          if (m.type() !== 'error') return;
          const loc = m.location();
          const where = loc && loc.url ? ` (${loc.url}:${loc.lineNumber})` : '';
          const msg = `[${entry.label}] console.error: ${m.text()}${where}`;
          entry.errors.push(msg);
          suite.errors.push(msg);
        });
        page.on('pageerror', (e) => {
          const msg = `[${entry.label}] uncaught: ${e && e.stack ? e.stack : e}`;
          entry.errors.push(msg);
          suite.errors.push(msg);
        });
        if (init) await page.addInitScript(init, initArg);
        await page.goto(suite.baseUrl + route);
        return page;
      },
    };
    /** Saves a full-page screenshot of `page` as <test>-<label>.png (one per page of the app). */
    ctx.snapshot = async (page, label) => {
      await page.screenshot({ path: path.join(ARTIFACTS, `${slug(name)}-${label}.png`), fullPage: true });
    };
    let failure = null;
    try {
      await fn(ctx);
    } catch (e) {
      failure = e;
    }
    const pageErrors = [];
    for (const entry of opened) {
      const file = path.join(ARTIFACTS, `${entry.label}.png`);
      await entry.page.screenshot({ path: file, fullPage: true }).catch((e) => {
        console.error(`screenshot ${file} failed: ${e.message}`);
      });
      pageErrors.push(...entry.errors);
      await entry.context.close().catch(() => {});
    }
    if (!failure && pageErrors.length) {
      failure = new Error(`console errors / uncaught exceptions in the page:\n${pageErrors.join('\n')}`);
    }
    if (failure) {
      console.error(`\n### ${name} failed: ${failure.message}`);
      if (pageErrors.length) console.error(`page errors:\n${pageErrors.join('\n')}`);
      console.error(suite.server.tail());
      console.error(`screenshots: ${ARTIFACTS}/${slug(name)}-*.png\n`);
      throw failure;
    }
  });

  return suite;
}

// ------------------------------------------------------------------------------------------------
// Page helpers for the contract's data-testid hooks

export const byTestId = (page, id, attrs = {}) => page.locator(
  `[data-testid="${id}"]` + Object.entries(attrs).map(([k, v]) => `[data-${k}="${v}"]`).join(''));

/** The data-run values of the visible runs-row elements. */
export async function visibleRuns(page) {
  return page.locator('[data-testid="runs-row"]:visible')
    .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-run')));
}

/** The first integer in an element's text (runs-count says "3" or "3 runs"). */
export async function countOf(locator) {
  const text = await locator.innerText();
  const m = text.match(/\d+/);
  if (!m) throw new Error(`no number in ${JSON.stringify(text)}`);
  return Number(m[0]);
}

/** An element screenshot once two consecutive ones agree (layout and drawing have settled). */
export async function stableShot(locator, { timeout = 5000 } = {}) {
  let prev = await locator.screenshot();
  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    await sleep(150);
    const cur = await locator.screenshot();
    if (cur.equals(prev)) return cur;
    prev = cur;
  }
  return prev;
}
