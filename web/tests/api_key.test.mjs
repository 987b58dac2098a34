// The dashboard against a server with an API key (docs/dashboard.md, "API key"), in a browser that
// has the key already (localStorage, as after the prompt: the prompt itself is reached through
// 401 answers, which the browser logs as console errors): its requests carry the key; the <img>
// elements of the image panels and the WebSocket, which cannot send headers, pass a short-lived
// token (?token=) instead, never the key.
// Run: scripts/test_browser.sh [build-dir]
import assert from 'node:assert/strict';
import { browserSuite, byTestId, encodePng, poll, writeRequest } from './harness.mjs';

const KEY = 'test-key-7f3a';
const AUTH = { Authorization: `Bearer ${KEY}` };
const T0 = Math.floor(Date.now() / 1000) - 600;

const suite = browserSuite({
  serverArgs: ['--api-key', KEY],
  setup: async (server) => {
    const lines = Array.from({ length: 20 }, (_, step) =>
      JSON.stringify({ project: 'keyed', run: 'r', step, time: T0 + step, metrics: { loss: 1 / (step + 1) } })).join('\n');
    const denied = await server.request('POST', '/api/v1/write', lines, { 'Content-Type': 'application/x-ndjson' });
    assert.equal(denied.status, 401, 'the server wants the key');
    const w = await server.request('POST', '/api/v1/write', lines, { 'Content-Type': 'application/x-ndjson', ...AUTH });
    assert.equal(w.status, 200, w.text);
    const image = encodePng(12, 12, () => [30, 160, 60]);
    const p = await server.request('POST', '/api/v1/write',
      writeRequest({ project: 'keyed', run: 'r', images: [{ name: 'samples', step: 5, time: T0 + 5, data: image }] }),
      { 'Content-Type': 'application/x-protobuf', ...AUTH });
    assert.equal(p.status, 200, p.text);
  },
});

suite.test('with an API key: charts and images load, the images passing a token', async ({ open, server }) => {
  const page = await open('/#/runs/keyed/r', {
    init: (key) => localStorage.setItem('trainwatch.apiKey', key), initArg: KEY,
  });
  const chart = byTestId(page, 'chart', { metric: 'loss' });
  await poll(async () => (await chart.getAttribute('data-last-step')) === '19', { timeout: 10000, what: 'the chart drawn' });
  const img = byTestId(page, 'image-panel', { tags: 'samples' }).locator('[data-testid="image-item"] img');
  await img.scrollIntoViewIfNeeded({ timeout: 10000 });
  await poll(() => img.evaluate((e) => e.complete && e.naturalWidth === 12), { what: 'the image decoded, 12 px wide' });
  const src = new URL(await img.getAttribute('src'), server.url);
  assert.match(src.pathname, /^\/api\/v1\/blobs\/[0-9a-f]{64}$/);
  assert.equal(src.searchParams.get('key'), null, 'the key is not in the URL');
  assert.ok(src.searchParams.get('token')?.startsWith('twt_'), `the <img> passes a token: ${src}`);
  // the same address without the token is refused: the token is what let the image in
  assert.equal((await server.request('GET', src.pathname)).status, 401);
  assert.equal((await server.request('GET', src.pathname + src.search)).status, 200);
  // and a key in the URL is refused, saying what to use instead
  const keyed = await server.request('GET', `${src.pathname}?key=${KEY}`);
  assert.equal(keyed.status, 401);
  assert.match(JSON.parse(keyed.text).error, /token/);
  assert.equal(await byTestId(page, 'api-key-prompt').count(), 0, 'no prompt: the stored key was accepted');
  await poll(async () => (await byTestId(page, 'live-status').innerText()).trim() === 'live',
    { what: 'the live WebSocket open with the key' });
});
