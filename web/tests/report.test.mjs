// Browser tests of training reports (docs/reports.md): the HTML file GET /api/v1/report answers,
// opened from disk in Chromium with the network off (every section present, the chart SVGs drawn,
// no request made), and the run view's Report button that downloads it; the report stored when a
// run ended (the alerting file's `reports:` section) and the run view's "Stored report" button.
// Run: scripts/test_browser.sh [build-dir]
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { ARTIFACTS, browserSuite, byTestId, poll } from './harness.mjs';

const T0 = Math.floor(Date.now() / 1000) - 3600;
const PROJECT = 'reports';
const SECTIONS = ['summary', 'charts', 'alerts', 'config', 'system'];

/** A demo-like run: loss, accuracy, lr, phase timers, system and GPU samples; NaN from `nanAt`. */
function run(name, lr, nanAt = null, status = 'finished') {
  const out = [];
  for (let step = 0; step < 400; step++) {
    let loss = 2 * Math.exp(-step / 120) + 0.05 * Math.sin(step * 0.7) + 0.1;
    if (nanAt !== null && step >= nanAt) loss = NaN;
    const metrics = { loss, lr, 'time/data': 0.01, 'time/forward': 0.03, 'time/backward': 0.05, 'time/step': 0.1 };
    if (step % 40 === 39) metrics.val_accuracy = Math.min(0.99, 0.5 + step / 800);
    const line = { project: PROJECT, run: name, step, time: T0 + step * 0.1, metrics };
    if (step === 0) Object.assign(line, { config: { optim: { lr }, model: { hidden: 64 } }, host: 'box-1' });
    if (step === 399) line.status = status;
    out.push(line);
    if (step % 10 === 0) {
      out.push({ project: PROJECT, run: name, step: step / 10, time: T0 + step * 0.1, metrics: {
        'system/cpu_percent': 40 + (step % 7), 'system/gpu/0/utilization_percent': step < 100 ? 0 : 90,
        'system/gpu/0/memory_used_bytes': 4e9 } });
    }
  }
  return out;
}

const suite = browserSuite({
  // Finished runs of this project get a stored report; 'blowup' crashes and gets none.
  alerting: 'reports:\n  - {projects: [reports], statuses: [finished]}\n',
  setup: async (server) => {
    // 'blowup' ends before 'mlp-lr5': had it been queued for a report, it would be stored first.
    await server.write([...run('mlp', 0.05), ...run('blowup', 0.05, 300, 'crashed'), ...run('mlp-lr5', 0.5)]);
    await poll(async () => {
      const r = await fetch(`${server.url}/api/v1/alerts?project=${PROJECT}&run=blowup`);
      return (await r.json()).alerts.some((a) => a.kind === 'nan');
    }, { timeout: 20000, what: "the nan alert on 'blowup'" });
    await poll(async () => {
      const r = await fetch(`${server.url}/api/v1/report/stored/info?project=${PROJECT}&run=mlp-lr5`);
      return (await r.json()).stored;
    }, { timeout: 20000, what: "the stored reports of the finished runs" });
  },
});

/** Opens `file` with the network off; fails on any request that is not the file itself. */
async function openOffline(page, file) {
  const context = page.context();
  const requests = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('file://')) return route.continue();
    requests.push(url);
    return route.abort();
  });
  await context.setOffline(true);
  await page.goto('file://' + file);
  return requests;
}

async function checkSections(page) {
  for (const s of SECTIONS) {
    const el = page.locator(`section[data-section="${s}"]`);
    assert.equal(await el.count(), 1, `section ${s}`);
    assert.ok(await el.isVisible(), `section ${s} visible`);
  }
  // Every chart's SVG is laid out and its envelope drawn: bands with an area on screen.
  const charts = await page.locator('svg.chart').evaluateAll((svgs) => svgs.map((svg) => {
    const box = svg.getBoundingClientRect();
    const bands = [...svg.querySelectorAll('path.band')].map((p) => p.getBBox());
    return { metric: svg.getAttribute('data-metric'), width: box.width, height: box.height,
      bands: bands.length, span: bands.reduce((a, b) => a + b.width, 0),
      area: bands.reduce((a, b) => a + b.width * b.height, 0) };
  }));
  return charts;
}

suite.test('a report opens from disk with the network off: every section, the charts drawn', async ({ server, open, snapshot }) => {
  for (const [name, query] of [['mlp', 'run=mlp&compare=mlp-lr5'], ['blowup', 'run=blowup']]) {
    const r = await fetch(`${server.url}/api/v1/report?project=${PROJECT}&${query}`);
    assert.equal(r.status, 200, await r.clone().text());
    const file = path.join(ARTIFACTS, `report-${name}.html`);
    await fsp.writeFile(file, await r.text());

    const page = await open('/#/runs');
    const requests = await openOffline(page, file);
    await page.waitForSelector('section[data-section="system"]');
    const charts = await checkSections(page);
    const main = charts.filter((c) => ['loss', 'lr', 'val_accuracy'].includes(c.metric));
    assert.ok(main.length >= 3, JSON.stringify(charts));
    for (const c of charts.filter((c) => c.metric !== null && c.bands > 0)) {
      assert.ok(c.width > 100 && c.height > 50, `chart ${c.metric} laid out: ${JSON.stringify(c)}`);
      assert.ok(c.span > 100, `chart ${c.metric} has its envelope drawn: ${JSON.stringify(c)}`);
    }
    const loss = charts.find((c) => c.metric === 'loss');
    assert.ok(loss && loss.bands >= (name === 'mlp' ? 2 : 1), `loss chart of both runs: ${JSON.stringify(loss)}`);
    assert.ok(loss.area > 0, `the loss varies: its band has an area: ${JSON.stringify(loss)}`); // lr is flat
    if (name === 'mlp') {
      const diff = page.locator('[data-testid="config-diff"]');
      assert.ok(await diff.isVisible());
      assert.match(await diff.innerText(), /optim\.lr\s+0\.05\s+0\.5/);
      assert.equal(await page.locator('[data-testid="time-bar"] div').count(), 3);
    } else {
      const alert = page.locator('.alert[data-alert-id]').first();
      assert.ok(await alert.isVisible());
      assert.match(await alert.innerText(), /nan on loss at step 300/);
      assert.equal(await alert.locator('svg.chart line.mark').count(), 1, 'the evidence chart marks the step');
      assert.ok(await page.locator('svg.timeline circle.alert-dot').count() >= 1);
    }
    assert.deepEqual(requests, [], 'the report fetched nothing');
    await snapshot(page, `report-${name}`);
  }
}, { timeout: 60000 });

suite.test('the run view has a Report button that downloads the report', async ({ open, snapshot }) => {
  const page = await open(`/#/runs/${PROJECT}/mlp`);
  const button = byTestId(page, 'report-html');
  await button.waitFor({ state: 'visible' });
  await snapshot(page, 'run-view');
  const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
  assert.equal(download.suggestedFilename(), 'report-mlp.html');
  const file = path.join(ARTIFACTS, 'report-from-button.html');
  await download.saveAs(file);
  const html = await fsp.readFile(file, 'utf8');
  for (const s of SECTIONS) assert.ok(html.includes(`data-section="${s}"`), s);
  assert.ok(html.includes('Training report: mlp'));
  assert.equal(await byTestId(page, 'report-error').count(), 0);
});

suite.test('the run view downloads the report stored when the run ended; a run without one has no button', async ({ open, snapshot }) => {
  const page = await open(`/#/runs/${PROJECT}/mlp`);
  const button = byTestId(page, 'report-stored');
  await button.waitFor({ state: 'visible' });
  assert.match(await button.getAttribute('title'), /stored when the run finished/);
  await snapshot(page, 'run-view-stored-report');
  const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
  assert.equal(download.suggestedFilename(), 'report-mlp.finished.html');
  const file = path.join(ARTIFACTS, 'report-stored.html');
  await download.saveAs(file);
  const html = await fsp.readFile(file, 'utf8');
  for (const s of SECTIONS) assert.ok(html.includes(`data-section="${s}"`), s);
  assert.ok(html.includes('Training report: mlp'));

  // 'blowup' crashed: the policy names finished runs only. Its Report button shows; no stored one.
  const other = await open(`/#/runs/${PROJECT}/blowup`);
  await byTestId(other, 'report-html').waitFor({ state: 'visible' });
  const info = await other.evaluate(async (p) => (await fetch(`/api/v1/report/stored/info?project=${p}&run=blowup`)).json(), PROJECT);
  assert.deepEqual(info, { project: PROJECT, run: 'blowup', stored: false });
  assert.equal(await byTestId(other, 'report-stored').count(), 0);
  assert.equal(await byTestId(other, 'report-error').count(), 0);
});
