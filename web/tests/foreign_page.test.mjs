// A foreign page in the victim's browser (issue 13, docs/security.md): a page served from another
// origin (a second local HTTP server, another port) tries, from inside Chromium, to create a
// silence, to write (a text/plain "simple request", a form post and a JSON fetch), to get a token
// and to open the live WebSocket. All of it is refused, and the API shows nothing changed — while
// the dashboard, open in the same browser context, keeps working: on a server without a key, and on
// one with a key, whose WebSocket and images carry short-lived tokens (renewed, and fresh on every
// reconnection), never the key.
// Run: scripts/test_browser.sh [build-dir]
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before } from 'node:test';
import { browserSuite, byTestId, encodePng, listenOnFreePort, poll, writeRequest } from './harness.mjs';

const KEY = 'test-key-f0re1gn';
const AUTH = { Authorization: `Bearer ${KEY}` };
const T0 = Math.floor(Date.now() / 1000) - 600;
const ROUTE = '/#/runs/victim/r';

// What the hostile page does, in the browser. Each attempt's outcome: a status (the answer was
// readable), 'opaque' (sent, answer unreadable: a no-cors simple request), 'blocked: <error>' (the
// browser refused to send it, or to show its answer), or for the WebSocket 'opened' / 'refused'.
const ATTACK = `
const T = new URL(TARGET);
const silence = JSON.stringify({ duration: '52w', comment: 'evil' });
const line = JSON.stringify({ project: 'victim', run: 'forged', step: 0, metrics: { loss: 9 } }) + '\\n';
async function attempt(f) {
  try { return await f(); } catch (e) { return 'blocked: ' + e.name; }
}
const sent = (r) => (r.type === 'opaque' ? 'opaque' : r.status);
const post = (path, type, body, mode = 'no-cors') =>
  fetch(new URL(path, T), { method: 'POST', mode, headers: { 'Content-Type': type }, body }).then(sent);
window.attacks = (async () => ({
  silenceSimple: await attempt(() => post('/api/v1/silences', 'text/plain', silence)),
  silenceJson: await attempt(() => post('/api/v1/silences', 'application/json', silence, 'cors')),
  writeSimple: await attempt(() => post('/api/v1/write', 'text/plain', line)),
  writeForm: await attempt(() => post('/api/v1/write', 'application/x-www-form-urlencoded', 'a=' + line)),
  writeJson: await attempt(() => post('/api/v1/write', 'application/json', line, 'cors')),
  token: await attempt(() => post('/api/v1/tokens', 'text/plain', '')),
  read: await attempt(() => fetch(new URL('/api/v1/runs', T)).then((r) => r.text())),
  websocket: await new Promise((resolve) => {
    const ws = new WebSocket(new URL('/api/v1/live', T.href.replace(/^http/, 'ws')));
    ws.onopen = () => { resolve('opened'); ws.close(); };
    ws.onerror = () => resolve('refused');
  }),
}))();
`;

/** Serves the hostile page on another port of 127.0.0.1 (another origin), aimed at `target()`. */
function hostileSite(target) {
  const site = { url: null, server: null };
  before(async () => {
    site.server = http.createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><title>cute cats</title><h1>cute cats</h1>` +
        `<script>const TARGET = ${JSON.stringify(target())};${ATTACK}</script>`);
    });
    const port = await listenOnFreePort(site.server);
    site.url = `http://127.0.0.1:${port}/`;
  });
  after(() => new Promise((r) => site.server.close(r)));
  return site;
}

/** What the API shows of the state a foreign page would want to change. */
async function serverState(server, headers) {
  const get = async (p) => {
    const r = await server.request('GET', p, undefined, headers);
    assert.equal(r.status, 200, `${p}: ${r.text}`);
    return JSON.parse(r.text);
  };
  return {
    runs: (await get('/api/v1/runs?project=victim')).runs.map((r) => r.id).sort(),
    silences: (await get('/api/v1/silences')).silences,
    audit: (await get('/api/v1/audit?limit=10000')).entries,
  };
}

/** Runs the hostile page in `context` and checks that nothing got through. */
async function attackFrom(context, site, server, headers, { keyed = false } = {}) {
  const before = await serverState(server, headers);
  const hostile = await context.newPage();
  await hostile.goto(site.url);
  const attacks = await hostile.evaluate(() => window.attacks);
  // Sent but unreadable (the server refused them: see below); or never sent at all (a preflight
  // the server does not grant); the live channel never opens; the data cannot be read.
  assert.deepEqual(attacks, {
    silenceSimple: 'opaque', silenceJson: 'blocked: TypeError', writeSimple: 'opaque', writeForm: 'opaque',
    writeJson: 'blocked: TypeError', token: 'opaque', read: 'blocked: TypeError', websocket: 'refused',
  });
  await hostile.close();
  // Nothing changed; what reached the server was refused for its Origin, and audited so (the
  // page has no key: its entries name none; the dashboard's own token requests do).
  const now = await serverState(server, headers);
  assert.deepEqual(now.runs, before.runs, 'no run was forged');
  assert.deepEqual(now.silences, [], 'no silence was created');
  const fresh = now.audit.slice(0, now.audit.length - before.audit.length).filter((e) => e.key === '');
  const refused = ['GET /api/v1/live 403', 'POST /api/v1/silences 403', 'POST /api/v1/tokens 403',
    'POST /api/v1/write 403', 'POST /api/v1/write 403'];
  if (keyed) refused.unshift('GET /api/v1/runs 401'); // the read, refused for want of a key
  assert.deepEqual(fresh.map((e) => `${e.action} ${e.outcome}`).sort(), refused.sort());
  for (const e of fresh.filter((e) => e.outcome === 403)) assert.match(e.detail, /may not change anything here/);
}

async function writeVictimRun(server, headers) {
  const lines = Array.from({ length: 20 }, (_, step) =>
    JSON.stringify({ project: 'victim', run: 'r', step, time: T0 + step, metrics: { loss: 1 / (step + 1) } })).join('\n');
  const w = await server.request('POST', '/api/v1/write', lines, { 'Content-Type': 'application/x-ndjson', ...headers });
  assert.equal(w.status, 200, w.text);
  const image = encodePng(12, 12, () => [200, 40, 40]);
  const p = await server.request('POST', '/api/v1/write',
    writeRequest({ project: 'victim', run: 'r', images: [{ name: 'samples', step: 5, time: T0 + 5, data: image }] }),
    { 'Content-Type': 'application/x-protobuf', ...headers });
  assert.equal(p.status, 200, p.text);
}

async function dashboardWorks(page) {
  const chart = byTestId(page, 'chart', { metric: 'loss' });
  await poll(async () => (await chart.getAttribute('data-last-step')) === '19', { timeout: 10000, what: 'the chart drawn' });
  await poll(async () => (await byTestId(page, 'live-status').innerText()).trim() === 'live',
    { timeout: 10000, what: 'the live WebSocket open' });
  const img = byTestId(page, 'image-panel', { tags: 'samples' }).locator('[data-testid="image-item"] img');
  await img.scrollIntoViewIfNeeded({ timeout: 10000 });
  await poll(() => img.evaluate((e) => e.complete && e.naturalWidth === 12), { what: 'the image decoded' });
  return img;
}

// ------------------------------------------------------------------------------------------------
// A server without a key (the laptop case): the browser protections alone hold.

const open = browserSuite({ setup: (server) => writeVictimRun(server, {}) });
const openSite = hostileSite(() => open.server.url);

open.test('no key: a foreign page changes nothing; the dashboard in the same browser works', async ({ open: go, server }) => {
  const page = await go(ROUTE);
  await dashboardWorks(page);
  await attackFrom(page.context(), openSite, server, {});
  await page.reload();
  const img = await dashboardWorks(page);
  assert.equal(new URL(await img.getAttribute('src'), server.url).search, '', 'no key: plain image URLs');
});

// ------------------------------------------------------------------------------------------------
// A server with a key; tokens live 2 s, so that the test sees them renewed.

const keyed = browserSuite({
  serverArgs: ['--api-key', KEY, '--token-ttl', '2s'],
  setup: (server) => writeVictimRun(server, AUTH),
});
const keyedSite = hostileSite(() => keyed.server.url);
const withKey = { init: (key) => localStorage.setItem('trainwatch.apiKey', key), initArg: KEY };

keyed.test('with a key: a foreign page changes nothing; the dashboard uses tokens, never the key', async ({ open: go, server }) => {
  const page = await go(ROUTE, withKey);
  const urls = [];
  page.on('request', (r) => urls.push(r.url()));
  page.on('websocket', (ws) => urls.push(ws.url()));
  await page.reload();
  const img = await dashboardWorks(page);
  const src = new URL(await img.getAttribute('src'), server.url);
  assert.match(src.pathname, /^\/api\/v1\/blobs\/[0-9a-f]{64}$/);
  assert.ok(src.searchParams.get('token')?.startsWith('twt_'), `the <img> passes a token: ${src}`);
  assert.equal(src.searchParams.get('key'), null);
  const live = urls.find((u) => u.includes('/api/v1/live'));
  assert.ok(live && new URL(live).searchParams.get('token')?.startsWith('twt_'), `the WebSocket passes a token: ${live}`);
  assert.deepEqual(urls.filter((u) => u.includes(KEY)), [], 'the key is in no URL');

  await attackFrom(page.context(), keyedSite, server, AUTH, { keyed: true });
  // The same browser context, with the key in its storage: the dashboard still works.
  await dashboardWorks(page);
});

keyed.test('with a key: tokens are renewed before they expire; a reconnection gets a fresh one', async ({ open: go, server }) => {
  const page = await go(ROUTE, withKey);
  // Route the live WebSocket through the test, to see its URLs and to close it.
  const sockets = [];
  await page.routeWebSocket(/\/api\/v1\/live/, (ws) => {
    const entry = { url: ws.url(), ws, fromServer: [] };
    const upstream = ws.connectToServer();
    upstream.onMessage((m) => {
      entry.fromServer.push(m);
      ws.send(m);
    });
    sockets.push(entry);
  });
  await page.reload();
  const img = await dashboardWorks(page);
  await poll(() => sockets.length === 1 && sockets[0].fromServer.length > 0, { what: 'the server answering the subscription' });
  const first = new URL(sockets[0].url).searchParams.get('token');
  assert.ok(first, sockets[0].url);

  // The images follow the token as it is renewed, and still load.
  const tokenOf = async () => new URL(await img.getAttribute('src'), server.url).searchParams.get('token');
  const imageToken = await tokenOf();
  await poll(async () => (await tokenOf()) !== imageToken && img.evaluate((e) => e.complete && e.naturalWidth === 12),
    { timeout: 10000, what: 'the image reloaded with a renewed token' });
  // The first token has expired now, by the server's clock...
  await poll(async () => {
    const r = await server.request('GET', `/api/v1/runs?token=${encodeURIComponent(first)}`);
    return r.status === 401 && r.text.includes('token expired');
  }, { timeout: 10000, what: "the WebSocket's first token expired" });
  // ... the open connection keeps going; once it drops, the app reconnects with a fresh token.
  sockets[0].ws.close();
  await poll(() => sockets.slice(1).some((s) => s.fromServer.some((m) => JSON.parse(m).type === 'subscribed')),
    { timeout: 10000, what: 'a reconnection the server accepted' });
  for (const s of sockets.slice(1)) assert.notEqual(new URL(s.url).searchParams.get('token'), first);
  await poll(async () => (await byTestId(page, 'live-status').innerText()).trim() === 'live', { what: 'live again' });
});
