// Browser test of a distributed run's page (issue 16; docs/distributed.md, docs/dashboard.md):
// 4 simulated ranks of one run written over HTTP as JSON lines (each line with its "rank"), rank 2
// slower than the others. Checks the across-rank band and median of the charts, the rank × step
// heatmaps, the ranks table, that selecting rank 2 draws its line highlighted, and that live points
// of the ranks reach the page. Run: scripts/test_browser.sh [build-dir]
import assert from 'node:assert/strict';
import { browserSuite, byTestId, decodePng, inkStats, poll, stableShot } from './harness.mjs';

const T0 = Math.floor(Date.now() / 1000) - 600;
const PROJECT = 'dist';
const RUN = 'ddp4';
const WORLD = 4;
const SLOW = 2;
const STEPS = 100; // ranks 0, 1 and 3 log steps 0..99
const SLOW_STEPS = 80; // rank 2, slower, only 0..79 in the same time
const HOSTS = ['node-a', 'node-a', 'node-b', 'node-b'];

/** A deterministic pseudo-random stream in [-1, 1). */
function noise(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  };
}

/** One rank's JSON line at `step`: the ranks' losses agree to within 0.01 (data parallelism), rank
 *  2 takes 2.5× as long per step, reaches the collective late and keeps its GPU less busy. */
function line(rank, step, rnd) {
  const slow = rank === SLOW;
  const period = slow ? 0.25 : 0.1;
  return {
    project: PROJECT, run: RUN, rank, world_size: WORLD, local_rank: rank % 2, host: HOSTS[rank],
    step, time: T0 + period * step,
    metrics: {
      loss: Number((2 * Math.exp(-step / 40) + 0.1 + 0.01 * rnd()).toFixed(6)),
      'dist/step_time': Number((period + 0.005 * rnd()).toFixed(6)),
      'dist/time_to_collective': Number(((slow ? 0.2 : 0.04) + 0.004 * rnd()).toFixed(6)),
      'system/gpu/utilization_percent': slow ? 40 + rnd() : 95 + rnd(),
    },
  };
}

/** The ranks' lines step by step, one write per step (as ranks stream): `[[lines of step 0], ...]`. */
function steps() {
  const rnd = [0, 1, 2, 3].map((rank) => noise(rank + 1));
  const out = [];
  for (let step = 0; step < STEPS; step++) {
    out.push([0, 1, 2, 3].filter((rank) => rank !== SLOW || step < SLOW_STEPS).map((rank) => line(rank, step, rnd[rank])));
  }
  return out;
}

const suite = browserSuite({
  setup: async (server) => {
    for (const lines of steps()) await server.write(lines);
  },
});

const chartOf = (page, metric) => byTestId(page, 'rank-chart', { metric });
const heatmapOf = (page, metric) => byTestId(page, 'rank-heatmap', { metric });
const attr = (loc, name) => loc.getAttribute(name);
const waitAttr = (loc, name, want, what, timeout = 10000) => poll(async () => {
  const v = await attr(loc, name);
  return (typeof want === 'function' ? want(v) : v === String(want)) && v;
}, { timeout, what: what ?? `${name}=${want}` });

/** The plot canvas of a uPlot chart (its largest canvas). */
async function plotCanvas(chart) {
  const sizes = await chart.locator('canvas').evaluateAll((cs) => cs.map((c) => c.clientWidth * c.clientHeight));
  return chart.locator('canvas').nth(sizes.indexOf(Math.max(...sizes)));
}

/** Pixels of a screenshot within `tolerance` (sum of channel differences) of the colour `hex`. */
function pixelsNear(png, hex, tolerance = 60) {
  const { data } = decodePng(png);
  const want = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  let n = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (Math.abs(data[i] - want[0]) + Math.abs(data[i + 1] - want[1]) + Math.abs(data[i + 2] - want[2]) <= tolerance) n++;
  }
  return n;
}

/** The mean colour of each of `rows` horizontal bands of the heatmap's plot area (the canvas less
 *  its rank labels on the left and step labels below: RankHeatmap.vue's LEFT, TOP, BOTTOM). */
function rowColors(png, rows) {
  const { width, height, data } = decodePng(png);
  const scale = width / Math.round(width); // device pixels per CSS pixel (1 here)
  const left = Math.ceil(60 * scale);
  const right = width - Math.ceil(12 * scale);
  const top = Math.ceil(4 * scale);
  const bottom = height - Math.ceil(20 * scale);
  const rowH = (bottom - top) / rows;
  const out = [];
  for (let r = 0; r < rows; r++) {
    const sum = [0, 0, 0];
    let n = 0;
    // the middle half of the row: clear of the outline a selected row gets
    for (let y = Math.round(top + (r + 0.25) * rowH); y < Math.round(top + (r + 0.75) * rowH); y++) {
      for (let x = left; x < right; x++) {
        const i = (y * width + x) * 4;
        for (let k = 0; k < 3; k++) sum[k] += data[i + k];
        n++;
      }
    }
    out.push(sum.map((v) => v / n));
  }
  return out;
}
const colorDistance = (a, b) => Math.abs(a[0] - b[0]) + Math.abs(a[1] - b[1]) + Math.abs(a[2] - b[2]);

suite.test('a distributed run shows its ranks: band and median, heatmaps, ranks table, a selected rank', async ({ open, snapshot, server }) => {
  const run = await server.getJson(`/api/v1/run?project=${PROJECT}&run=${RUN}`);
  assert.equal(run.world_size, WORLD, `/api/v1/run tells the world size: ${JSON.stringify(run)}`);

  const page = await open(`/#/runs/${PROJECT}/${RUN}`, { viewport: { width: 1400, height: 1000 } });
  const requests = [];
  page.on('request', (r) => { if (r.url().includes('/api/v1/series')) requests.push(new URL(r.url())); });
  await byTestId(page, 'ranks-panel').waitFor({ timeout: 10000 });
  assert.match(await byTestId(page, 'run-world-size').innerText(), /\b4\b/);

  // The ranks table: every rank with its host and last step; rank 2 behind the median by 20 steps.
  const table = byTestId(page, 'ranks-table');
  await waitAttr(table, 'data-ranks', WORLD, `${WORLD} ranks in the table`);
  const rows = await byTestId(page, 'rank-row').evaluateAll((els) => els.map((e) => ({
    rank: Number(e.dataset.rank), host: e.dataset.host, lastStep: Number(e.dataset.lastStep),
    lag: Number(e.dataset.lag), status: e.dataset.status, text: e.innerText,
  })));
  console.log(`ranks table: ${JSON.stringify(rows.map(({ text, ...r }) => r))}`);
  assert.deepEqual(rows.map((r) => r.rank), [0, 1, 2, 3]);
  assert.deepEqual(rows.map((r) => r.host), HOSTS);
  assert.deepEqual(rows.map((r) => r.lastStep), [STEPS - 1, STEPS - 1, SLOW_STEPS - 1, STEPS - 1]);
  assert.deepEqual(rows.map((r) => r.lag), [0, 0, STEPS - SLOW_STEPS, 0]);
  assert.match(rows[SLOW].text, new RegExp(`${STEPS - SLOW_STEPS} behind`));
  for (const r of rows) assert.ok(['running', 'finished', 'dead'].includes(r.status), `rank ${r.rank} status ${r.status}`);

  // The band: dist/step_time's maximum is rank 2's in (nearly) every bucket, its minimum another's.
  const stepTime = chartOf(page, 'dist/step_time');
  await stepTime.scrollIntoViewIfNeeded();
  await waitAttr(stepTime, 'data-band', 1, 'the band of dist/step_time');
  await waitAttr(stepTime, 'data-last-step', STEPS - 1);
  assert.equal(await attr(stepTime, 'data-max-rank'), String(SLOW), 'rank 2 holds the maximum step time');
  assert.notEqual(await attr(stepTime, 'data-min-rank'), String(SLOW), 'rank 2 never holds the minimum');
  const agg = requests.find((u) => u.pathname === '/api/v1/series/ranks' && u.searchParams.get('metric') === 'dist/step_time');
  assert.ok(agg, 'the chart asked /api/v1/series/ranks');
  const canvas = await plotCanvas(stepTime);
  const bandShot = await stableShot(canvas);
  const ink = inkStats(bandShot);
  console.log(`dist/step_time band chart pixels: ${JSON.stringify(ink)}`);
  assert.ok(ink.colored >= 2000, `the band is filled (coloured pixels): ${JSON.stringify(ink)}`);
  const highlight = await attr(stepTime, 'data-highlight');
  const before = pixelsNear(bandShot, highlight);
  assert.ok(before < 30, `no highlighted line before a rank is selected (${before} pixels near ${highlight})`);
  const loss = chartOf(page, 'loss');
  await loss.scrollIntoViewIfNeeded();
  await waitAttr(loss, 'data-band', 1, 'the band of loss');
  await waitAttr(loss, 'data-last-step', STEPS - 1);

  // The heatmaps: one per metric that tells ranks apart, 4 rows; rank 2's row stands out.
  for (const m of ['dist/step_time', 'dist/time_to_collective', 'loss', 'system/gpu/utilization_percent']) {
    const h = heatmapOf(page, m);
    await h.scrollIntoViewIfNeeded();
    await waitAttr(h, 'data-ranks', WORLD, `${WORLD} rows in the ${m} heatmap`);
  }
  assert.equal(await attr(heatmapOf(page, 'dist/step_time'), 'data-hot-rank'), String(SLOW));
  assert.equal(await attr(heatmapOf(page, 'dist/time_to_collective'), 'data-hot-rank'), String(SLOW));
  assert.notEqual(await attr(heatmapOf(page, 'system/gpu/utilization_percent'), 'data-hot-rank'), String(SLOW));
  const heat = heatmapOf(page, 'dist/step_time');
  await heat.scrollIntoViewIfNeeded();
  const colors = rowColors(await stableShot(byTestId(page, 'rank-heatmap-canvas').first()), WORLD);
  console.log(`dist/step_time heatmap row colours: ${JSON.stringify(colors.map((c) => c.map(Math.round)))}`);
  for (const r of [0, 1, 3]) {
    assert.ok(colorDistance(colors[r], colors[0]) < 40, `ranks 0, 1, 3 alike: ${JSON.stringify(colors)}`);
    assert.ok(colorDistance(colors[SLOW], colors[r]) > 150, `rank 2's row stands out from rank ${r}'s: ${JSON.stringify(colors)}`);
  }
  await snapshot(page, 'distributed-run');

  // Selecting rank 2 (its row in the table) draws its line, highlighted, on every chart.
  const asked = requests.length;
  await byTestId(page, 'rank-row', { rank: SLOW }).click();
  await poll(() => /[?&]rank=2\b/.test(page.url()), { what: `rank=2 in the URL (${page.url()})` });
  await stepTime.scrollIntoViewIfNeeded();
  await waitAttr(stepTime, 'data-selected-rank', SLOW, 'rank 2 selected on the dist/step_time chart');
  await waitAttr(stepTime, 'data-selected-points', (v) => Number(v) > 0, 'rank 2\'s points drawn');
  const one = requests.slice(asked).find((u) => u.pathname === '/api/v1/series' && u.searchParams.get('rank') === String(SLOW) &&
    u.searchParams.get('metric') === 'dist/step_time');
  assert.ok(one, `the chart asked /api/v1/series?rank=2: ${requests.slice(asked).map(String).join(' ')}`);
  assert.equal(await byTestId(page, 'rank-row', { rank: SLOW }).getAttribute('aria-selected'), 'true');
  await waitAttr(heatmapOf(page, 'dist/step_time'), 'data-selected-rank', SLOW);
  const selectedShot = await stableShot(await plotCanvas(stepTime));
  const after = pixelsNear(selectedShot, highlight);
  console.log(`highlighted pixels (${highlight}) on dist/step_time: ${before} before, ${after} with rank 2 selected`);
  assert.ok(after >= 150, `rank 2's line is drawn in the highlight colour ${highlight} (${after} pixels)`);
  await snapshot(page, 'rank-2-selected');

  // The picker selects any rank; clearing it removes the line.
  await byTestId(page, 'rank-select').selectOption('0');
  await waitAttr(stepTime, 'data-selected-rank', 0, 'rank 0 selected through the picker');
  await byTestId(page, 'rank-clear').click();
  await waitAttr(stepTime, 'data-selected-points', 0, 'no rank line once cleared');
  assert.doesNotMatch(page.url(), /[?&]rank=/);

  // A click on a heatmap row selects its rank: rank 2's row of the step-time heatmap.
  const heatCanvas = heatmapOf(page, 'dist/step_time').locator('[data-testid="rank-heatmap-canvas"]');
  await heatCanvas.scrollIntoViewIfNeeded();
  const box = await heatCanvas.boundingBox();
  const rowH = (box.height - 24) / WORLD;
  await page.mouse.click(box.x + box.width / 2, box.y + 4 + rowH * (SLOW + 0.5));
  await poll(() => /[?&]rank=2\b/.test(page.url()), { what: `rank=2 in the URL after a click on its heatmap row (${page.url()})` });
});

suite.test('live points of the ranks reach the band and the ranks table', async ({ open, server }) => {
  const page = await open(`/#/runs/${PROJECT}/${RUN}?rank=${SLOW}`, { viewport: { width: 1400, height: 1000 } });
  const stepTime = chartOf(page, 'dist/step_time');
  await stepTime.scrollIntoViewIfNeeded();
  await waitAttr(stepTime, 'data-last-step', STEPS - 1);
  await waitAttr(stepTime, 'data-selected-rank', SLOW);
  await poll(async () => (await byTestId(page, 'live-status').innerText()).trim() === 'live', { what: 'live-status "live"' });
  await page.evaluate(() => { window.__twNoReload = true; });

  // The fast ranks write their next step (100, 101, ...), the slow rank its own (80, 81, ...). The
  // subscription follows the socket's opening: write a step more until the points show.
  const rnd = noise(100);
  let next = 0;
  await poll(async () => {
    await server.write([0, 1, 2, 3].map((rank) => line(rank, (rank === SLOW ? SLOW_STEPS : STEPS) + next, rnd)));
    next++;
    return Number(await attr(stepTime, 'data-last-step')) >= STEPS;
  }, { timeout: 10000, interval: 700, what: 'data-last-step ≥ 100 on dist/step_time after live points' });
  await waitAttr(byTestId(page, 'rank-row', { rank: 0 }), 'data-last-step', (v) => Number(v) >= STEPS, 'rank 0 at step 100 in the table');
  await waitAttr(byTestId(page, 'rank-row', { rank: SLOW }), 'data-last-step', (v) => Number(v) >= SLOW_STEPS, 'rank 2 at step 80 in the table');
  await waitAttr(stepTime, 'data-selected-points', (v) => Number(v) > 0);
  assert.equal(await page.evaluate(() => window.__twNoReload), true, 'the page was reloaded');
});

suite.test('an alert naming a rank links to that rank', async ({ open, server }) => {
  // Rank 2 reaches the collective 5× later than the other ranks' median on every step: a straggler
  // (docs/detectors.md), an alert that names rank 2 and its host.
  const named = await poll(async () => {
    const { alerts } = await server.getJson(`/api/v1/alerts?project=${PROJECT}&run=${RUN}&kind=straggler`);
    return alerts.find((a) => a.rank === SLOW);
  }, { timeout: 15000, what: 'a straggler alert naming rank 2' });
  console.log(`alert ${named.id} ${named.kind} names rank ${named.rank} (${named.host})`);
  assert.equal(named.host, HOSTS[SLOW]);

  const page = await open('/#/alerts');
  const row = byTestId(page, 'alert-row', { 'alert-id': named.id });
  await row.waitFor({ timeout: 10000 });
  assert.equal((await row.locator('[data-testid="alert-rank"]').innerText()).trim(), `rank ${SLOW}`);
  await row.locator('[data-testid="alert-link"]').click();
  await poll(() => page.url().includes(`#/runs/${PROJECT}/${RUN}`) && /[?&]rank=2\b/.test(page.url()),
    { what: `the run's page with rank=2 (${page.url()})` });
  const chart = byTestId(page, 'rank-chart').first();
  await chart.waitFor({ timeout: 10000 });
  await waitAttr(chart, 'data-selected-rank', SLOW, 'rank 2 selected on the charts');
  await waitAttr(byTestId(page, 'rank-row', { rank: SLOW }), 'aria-selected', 'true', 'rank 2 selected in the table');
  // On the run's page the alert is a link to the rank too.
  const badge = byTestId(page, 'run-alert', { kind: 'straggler', rank: SLOW }).first();
  await badge.waitFor({ timeout: 10000 });
  assert.match(await badge.getAttribute('href'), /[?&]rank=2\b/);
  assert.match(await badge.innerText(), /rank 2/);
});
