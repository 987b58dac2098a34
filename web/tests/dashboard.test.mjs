// Browser tests of the dashboard against a real server (issue 5; the contract is
// docs/design/dashboard.md). Run: scripts/test_browser.sh [build-dir]
import assert from 'node:assert/strict';
import {
  browserSuite, byTestId, countOf, inkStats, pixelDiff, poll, sleep, stableShot, visibleRuns,
} from './harness.mjs';

const T0 = Math.floor(Date.now() / 1000) - 3600; // record times: an hour ago, 0.5 s per step

/** A deterministic pseudo-random stream in [-1, 1). */
function noise(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  };
}

/** Records of one run: steps [0, steps), loss falling from 2 with `jitter` noise, plus accuracy. */
function run(project, id, steps, { rate = 80, jitter = 0.02, seed = 1, accuracy = true } = {}) {
  const rnd = noise(seed);
  const out = [];
  for (let step = 0; step < steps; step++) {
    const loss = 2 * Math.exp(-step / rate) + 0.1 + jitter * rnd();
    const metrics = { loss: Number(loss.toFixed(6)) };
    if (accuracy) metrics.accuracy = Number((1 - loss / 2.2).toFixed(6));
    out.push({ project, run: id, step, time: T0 + 0.5 * step, metrics });
  }
  return out;
}

const SPIKY = { steps: 10000, spikeStep: 6661, spike: 5, level: 1 };
function spiky() {
  const out = [];
  for (let step = 0; step < SPIKY.steps; step++) {
    const loss = step === SPIKY.spikeStep ? SPIKY.spike : SPIKY.level + 0.001 * (step % 3);
    out.push({ project: 'zoom', run: 'spiky', step, time: T0 + 0.1 * step, metrics: { loss } });
  }
  return out;
}

// Every run exists before the first test, so the runs table has a fixed content throughout.
const RUNS = {
  'vision/resnet-lr1e-3': run('vision', 'resnet-lr1e-3', 200, { rate: 60, seed: 1 }),
  'vision/resnet-lr3e-4': run('vision', 'resnet-lr3e-4', 200, { rate: 120, seed: 2 }),
  'vision/vit-base': run('vision', 'vit-base', 150, { rate: 90, seed: 3 }),
  // Loud noise, so that smoothing visibly changes the line.
  'nlp/noisy': run('nlp', 'noisy', 300, { rate: 150, jitter: 0.5, seed: 4, accuracy: false }),
  // Written to during the live test.
  'nlp/live': run('nlp', 'live', 50, { seed: 5, accuracy: false }),
  // Healthy training records (a smoothly falling loss), then a NaN during the alerts test.
  'nlp/diverge': run('nlp', 'diverge', 80, { rate: 400, jitter: 0, accuracy: false }),
  // Zoom: a long flat line with a one-step spike that only full resolution draws as a point.
  'zoom/spiky': spiky(),
};
const ALL = Object.keys(RUNS).sort();

const suite = browserSuite({
  setup: async (server) => {
    await server.write(Object.values(RUNS).flat());
  },
});

const waitLastStep = (chart, step, timeout = 10000) => poll(
  async () => (await chart.getAttribute('data-last-step')) === String(step),
  { timeout, what: `data-last-step="${step}" on ${chart}` });

suite.test('runs table lists the runs written through the API', async ({ open }) => {
  const page = await open('/#/runs');
  const runs = await poll(async () => {
    const seen = await visibleRuns(page);
    return seen.length >= ALL.length && seen;
  }, { timeout: 10000, what: `${ALL.length} runs-row elements` });
  assert.deepEqual([...runs].sort(), ALL);
  for (const r of ALL) {
    const row = byTestId(page, 'runs-row', { run: r });
    assert.equal(await row.count(), 1, `one runs-row for ${r}`);
    assert.equal(await row.locator('[data-testid="runs-select"]').count(), 1, `runs-select in the row of ${r}`);
  }
  await poll(async () => (await countOf(byTestId(page, 'runs-count'))) === ALL.length,
    { what: `runs-count = ${ALL.length}` });
});

suite.test('regex search filters the runs; an invalid pattern is reported', async ({ open }) => {
  const page = await open('/#/runs');
  await poll(async () => (await visibleRuns(page)).length === ALL.length, { timeout: 10000, what: 'all runs' });
  const search = byTestId(page, 'runs-search');
  const count = byTestId(page, 'runs-count');
  const error = byTestId(page, 'runs-search-error');

  const expectShown = async (pattern, expected) => {
    await search.fill(pattern);
    await poll(async () => {
      const seen = (await visibleRuns(page)).sort();
      return JSON.stringify(seen) === JSON.stringify(expected) &&
        (await countOf(count)) === expected.length;
    }, { what: `rows ${JSON.stringify(expected)} and runs-count ${expected.length} for /${pattern}/` });
    assert.equal(await error.count(), 0, `no runs-search-error for the valid pattern /${pattern}/`);
  };

  await expectShown('resnet-lr(1e-3|3e-4)', ['vision/resnet-lr1e-3', 'vision/resnet-lr3e-4']);
  await expectShown('vit|lr3e-4', ['vision/resnet-lr3e-4', 'vision/vit-base']);

  await search.fill('resnet-(');
  await error.waitFor({ state: 'visible', timeout: 5000 });
  assert.notEqual((await error.innerText()).trim(), '', 'runs-search-error says why the pattern is invalid');

  await expectShown('noisy|diverge', ['nlp/diverge', 'nlp/noisy']);
  await expectShown('', ALL);
});

suite.test('a chart draws the points of the selected runs', async ({ open }) => {
  const page = await open('/#/scalars?runs=vision/resnet-lr1e-3,vision/vit-base');
  const loss = byTestId(page, 'chart', { metric: 'loss' });
  const accuracy = byTestId(page, 'chart', { metric: 'accuracy' });
  await loss.waitFor({ state: 'visible', timeout: 10000 });
  await accuracy.waitFor({ state: 'visible', timeout: 10000 });
  await waitLastStep(loss, 199); // the largest step drawn: resnet's 199 (vit-base ends at 149)
  await waitLastStep(accuracy, 199);
  await poll(async () => (await loss.getAttribute('data-series')) === '2', { what: 'data-series="2"' });

  // The plot's pixels against its background: a drawn line leaves coloured ink (axes, grid and
  // labels are grey). Measured on the chart's largest canvas, else on the whole chart element.
  const canvases = await loss.locator('canvas').evaluateAll(
    (cs) => cs.map((c, i) => ({ i, area: c.clientWidth * c.clientHeight })));
  const target = canvases.length
    ? loss.locator('canvas').nth(canvases.sort((a, b) => b.area - a.area)[0].i)
    : loss;
  const stats = inkStats(await stableShot(target));
  console.log(`loss chart pixels: ${JSON.stringify(stats)}`);
  assert.ok(stats.ink >= 0.002 * stats.pixels, `the chart is blank: ${JSON.stringify(stats)}`);
  assert.ok(stats.colored >= 150, `no coloured line drawn in the chart: ${JSON.stringify(stats)}`);
});

suite.test('moving the smoothing slider changes the line', async ({ open }) => {
  const page = await open('/#/scalars?runs=nlp/noisy');
  const chart = byTestId(page, 'chart', { metric: 'loss' });
  await waitLastStep(chart, 299);
  const slider = byTestId(page, 'smoothing-slider');
  assert.equal(await slider.getAttribute('type'), 'range');
  assert.equal(Number(await slider.inputValue()), 0.6, 'smoothing defaults to 0.6');
  const before = await stableShot(chart);

  await slider.fill('0');
  const changed = await poll(async () => {
    const n = pixelDiff(before, await chart.screenshot());
    return n >= 50 && n;
  }, { timeout: 5000, what: 'the chart to change after smoothing 0.6 → 0' });
  console.log(`smoothing 0.6 → 0 changed ${changed} pixels of the chart`);
  await poll(async () => {
    const q = new URLSearchParams(new URL(page.url()).hash.split('?')[1] || '');
    return q.has('smoothing') && Number(q.get('smoothing')) === 0;
  }, { what: `smoothing=0 in the URL (view state lives in the URL), url ${page.url()}` });

  const unsmoothed = await stableShot(chart);
  await slider.fill('0.95');
  await poll(async () => pixelDiff(unsmoothed, await chart.screenshot()) >= 50,
    { timeout: 5000, what: 'the chart to change after smoothing 0 → 0.95' });
});

suite.test('drag-zoom refetches the range and shows the points the overview could not', async ({ open }) => {
  const page = await open('/#/scalars?runs=zoom/spiky&smoothing=0');
  const series = []; // the /api/v1/series requests of the page, in order
  page.on('request', (r) => { if (r.url().includes('/api/v1/series')) series.push(new URL(r.url()).searchParams); });
  const chart = byTestId(page, 'chart', { metric: 'loss' });
  await waitLastStep(chart, SPIKY.steps - 1);
  const overview = Number(await chart.getAttribute('data-bucket-max'));
  assert.ok(overview > 1, `the overview is downsampled: data-bucket-max ${overview}`);

  // The tooltip at a step's position names the nearest point drawn, and its value.
  const over = chart.locator('.u-over');
  const tooltip = chart.locator('.chart-tooltip');
  const hoverStep = async (step, [from, to]) => {
    const box = await over.boundingBox();
    await page.mouse.move(box.x + ((step - from) / (to - from)) * box.width, box.y + box.height / 2);
    await tooltip.waitFor({ state: 'visible' });
    return (await tooltip.innerText()).replace(/\s+/g, ' ');
  };
  const before = await hoverStep(SPIKY.spikeStep, [0, SPIKY.steps - 1]);
  // Where the spike's step happens to be a bucket's first or last point, the overview draws it too.
  const requested = Number(series.at(-1)?.get('buckets'));
  const width = (SPIKY.steps - 1) / requested;
  const bucket = Math.floor(SPIKY.spikeStep / width);
  const atEdge = [Math.ceil(bucket * width), Math.ceil((bucket + 1) * width) - 1].includes(SPIKY.spikeStep);
  console.log(`overview: ${requested} buckets, up to ${overview} points each; tooltip at step ${SPIKY.spikeStep}: "${before}"`);
  if (!atEdge) assert.doesNotMatch(before, new RegExp(`step ${SPIKY.spikeStep}\\b`), 'the overview has no point at the spike');

  // Drag over ~160 steps around the spike: fewer steps than buckets, so the server sends every point.
  const box = await over.boundingBox();
  const px = (step) => box.x + (step / (SPIKY.steps - 1)) * box.width;
  const y = box.y + box.height / 2;
  const fetched = series.length;
  await page.mouse.move(px(SPIKY.spikeStep - 80), y);
  await page.mouse.down();
  await page.mouse.move(px(SPIKY.spikeStep + 80), y, { steps: 8 });
  await page.mouse.up();
  const range = await poll(() => {
    const q = new URLSearchParams(new URL(page.url()).hash.split('?')[1] || '');
    return q.has('from') && q.has('to') && [Number(q.get('from')), Number(q.get('to'))];
  }, { what: 'from/to in the URL after the drag' });
  assert.ok(range[0] < SPIKY.spikeStep && SPIKY.spikeStep < range[1] && range[1] - range[0] < requested,
    `zoom range ${range} holds the spike and fewer steps than buckets (${requested})`);
  const refetch = await poll(() => series.slice(fetched).find((q) => Number(q.get('from')) === range[0] &&
    Number(q.get('to')) === range[1]), { what: `a /api/v1/series request for [${range}]` });
  assert.equal(refetch.get('metric'), 'loss');
  await poll(async () => (await chart.getAttribute('data-bucket-max')) === '1',
    { timeout: 10000, what: 'data-bucket-max="1" (every point drawn as it is) after the zoom' });
  await page.mouse.move(box.x + box.width / 2, box.y + box.height + 60); // leave, then come back
  const after = await hoverStep(SPIKY.spikeStep, range);
  console.log(`zoomed to [${range}]: tooltip at step ${SPIKY.spikeStep}: "${after}"`);
  assert.match(after, new RegExp(`step ${SPIKY.spikeStep}\\b`), 'the spike is a point of the zoomed chart');
  assert.match(after, new RegExp(`\\b${SPIKY.spike}\\b`), `the tooltip shows the spike's value ${SPIKY.spike}`);
});

suite.test('a point written during the test appears without reload', async ({ open, server }) => {
  const page = await open('/#/scalars?runs=nlp/live');
  const chart = byTestId(page, 'chart', { metric: 'loss' });
  await waitLastStep(chart, 49);
  await poll(async () => (await byTestId(page, 'live-status').innerText()).trim() === 'live',
    { what: 'live-status "live"' });
  await sleep(200); // the subscription follows the WebSocket's opening
  await page.evaluate(() => { window.__twNoReload = true; });

  for (const step of [50, 51]) {
    await server.write([{ project: 'nlp', run: 'live', step, time: T0 + 0.5 * step, metrics: { loss: 0.05 } }]);
    const t = Date.now();
    await waitLastStep(chart, step, 2000);
    console.log(`live point at step ${step} drawn ${Date.now() - t} ms after the write was acknowledged`);
  }
  assert.equal(await page.evaluate(() => window.__twNoReload), true, 'the page was reloaded');
});

suite.test('an alert raised during the test appears in the alerts view without reload', async ({ open, server }) => {
  const page = await open('/#/alerts');
  await poll(async () => (await byTestId(page, 'live-status').innerText()).trim() === 'live',
    { timeout: 10000, what: 'live-status "live"' });
  await sleep(300); // let the first load of the alerts list settle
  const rows = byTestId(page, 'alert-row', { kind: 'nan' });
  assert.equal(await rows.count(), 0, 'no nan alert before the NaN is written');
  await page.evaluate(() => { window.__twNoReload = true; });

  await server.write([`{"project": "nlp", "run": "diverge", "step": 80, "time": ${T0 + 40}, "metrics": {"loss": NaN}}`]);
  const t = Date.now();
  const alert = await poll(async () => {
    const { alerts } = await server.getJson('/api/v1/alerts?project=nlp&run=diverge&kind=nan');
    return alerts.find((a) => a.status === 'firing');
  }, { what: 'the server to fire the nan alert' });
  const row = byTestId(page, 'alert-row', { kind: 'nan', 'alert-id': alert.id });
  await row.waitFor({ state: 'visible', timeout: 5000 });
  console.log(`nan alert ${alert.id} shown ${Date.now() - t} ms after the write was acknowledged`);
  await poll(async () => (await row.getAttribute('data-status')) === 'firing', { what: 'data-status="firing"' });
  assert.equal(await row.locator('[data-testid="alert-ack"]').count(), 1, 'alert-ack in the row');
  assert.equal(await row.locator('[data-testid="alert-silence"]').count(), 1, 'alert-silence in the row');
  assert.equal(await page.evaluate(() => window.__twNoReload), true, 'the page was reloaded');

  // The row links to the chart at the step, where the alert is a marker on the series.
  await row.locator('[data-testid="alert-link"]').first().click();
  await poll(() => page.url().includes('#/runs/nlp/diverge'), { what: 'the run detail route' });
  assert.match(page.url(), /metric=loss/);
  assert.match(page.url(), /step=80/);
  const marker = byTestId(page, 'chart', { metric: 'loss' }).locator('[data-testid="alert-marker"]');
  await marker.first().waitFor({ state: 'attached', timeout: 10000 });
});

suite.test('the main actions work from the keyboard', async ({ open }) => {
  const page = await open('/#/runs');
  await byTestId(page, 'runs-row').first().waitFor({ timeout: 10000 });
  await page.locator('body').click({ position: { x: 5, y: 5 } });  // focus the page, not a control
  await page.keyboard.press('/');
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-testid')), 'runs-search',
               '"/" focuses the search');
  await page.keyboard.type('resnet');
  await poll(async () => (await byTestId(page, 'runs-count').textContent())?.includes('2'), { what: '2 runs' });
  await page.keyboard.press('Escape');
  await page.keyboard.press('g');
  await page.keyboard.press('a');
  await poll(() => page.url().includes('#/alerts'), { what: '"g a" to open the alerts' });
});

suite.test('no console errors on any page', async ({ open, snapshot, suite: s }) => {
  // One page through every route of the contract, by its navigation links where there are some.
  const page = await open('/#/runs');
  await byTestId(page, 'runs-row').first().waitFor({ timeout: 10000 });
  await snapshot(page, 'page-runs');
  await byTestId(page, 'nav-alerts').click();
  await poll(() => page.url().includes('#/alerts'), { what: 'the alerts route' });
  await sleep(500);
  await snapshot(page, 'page-alerts');
  await byTestId(page, 'nav-scalars').click();
  await poll(() => page.url().includes('#/scalars'), { what: 'the scalars route' });
  await page.goto(`${s.baseUrl}/#/scalars?runs=vision/resnet-lr1e-3,vision/resnet-lr3e-4,nlp/noisy&x=relative&log=1`);
  await byTestId(page, 'chart', { metric: 'loss' }).waitFor({ timeout: 10000 });
  await snapshot(page, 'page-scalars');
  await byTestId(page, 'combine-toggle').click();
  await page.goto(`${s.baseUrl}/#/scalars?runs=vision/resnet-lr1e-3&combine=loss,accuracy`);
  await byTestId(page, 'combined-chart').waitFor({ timeout: 10000 });
  await snapshot(page, 'page-combined');
  await page.goto(`${s.baseUrl}/#/runs/nlp/diverge?metric=loss&step=80`);
  await byTestId(page, 'chart', { metric: 'loss' }).waitFor({ timeout: 10000 });
  await snapshot(page, 'page-run-detail');
  // The system page: machine samples of a run (CPU and one GPU), with the GPU heatmap.
  const samples = [];
  for (let i = 0; i < 60; i++) {
    samples.push({ project: 'vision', run: 'vit-base', step: 1000 + i, time: T0 + i, metrics: {
      'system/cpu_percent': 40 + (i % 7), 'system/gpu/0/utilization_percent': i % 2 ? 95 : 60 } });
  }
  await s.server.write(samples);
  await page.goto(`${s.baseUrl}/#/system?runs=vision/vit-base`);
  await byTestId(page, 'system-chart', { metric: 'system/cpu_percent' }).waitFor({ timeout: 10000 });
  await byTestId(page, 'gpu-heatmap').waitFor({ timeout: 10000 });
  await sleep(300);
  await snapshot(page, 'page-system');
  await byTestId(page, 'nav-runs').click();
  await byTestId(page, 'runs-row').first().waitFor({ timeout: 10000 });
  await sleep(500); // late errors (failed fetches, WebSocket) surface here
  assert.deepEqual(s.errors, [], 'console errors or uncaught exceptions during the suite');
});
