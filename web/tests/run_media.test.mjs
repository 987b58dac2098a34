// Browser tests of the run detail page's histograms (heatmap, offset, overlay), images and text,
// against a real server; everything is written through POST /api/v1/write as protobuf (the only
// form these take). Run: scripts/test_browser.sh [build-dir]
import assert from 'node:assert/strict';
import {
  browserSuite, byTestId, columnTops, encodePng, meanColor, poll, sleep, stableShot, writeRequest,
} from './harness.mjs';

const T0 = Math.floor(Date.now() / 1000) - 3600;
const PROJECT = 'media';
const RUN = 'mnist';

/** 10 histograms of one name: a narrow bell whose centre moves from -3 (step 0) to +3 (step 90). */
function histograms() {
  const edges = Array.from({ length: 49 }, (_, i) => -6 + i * 0.25);
  return Array.from({ length: 10 }, (_, f) => {
    const mean = -3 + (6 * f) / 9;
    const counts = edges.slice(0, -1).map((a) => Math.round(1000 * Math.exp(-(((a + 0.125 - mean) / 0.6) ** 2) / 2)));
    return { name: 'weights/fc1', step: f * 10, time: T0 + f, edges, counts };
  });
}

const square = (rgb) => encodePng(16, 16, () => rgb);
const RED = [220, 30, 30];
const GREEN = [30, 180, 60];
const BLUE = [30, 60, 220];
const IMAGE_STEPS = [10, 20, 30];

function images() {
  const out = [];
  for (const step of IMAGE_STEPS) {
    out.push({ name: 'samples/pred', step, time: T0 + step, index: 0, data: square(RED), caption: `prediction at ${step}` });
    out.push({ name: 'samples/truth', step, time: T0 + step, index: 0, data: square(BLUE), caption: `truth at ${step}` });
  }
  out.push({ name: 'samples/pred', step: 30, time: T0 + 30, index: 1, data: square(GREEN), caption: 'second prediction' });
  out.push({ name: 'inputs', step: 20, time: T0 + 20, index: 0, data: encodePng(8, 8, (x) => (x < 4 ? RED : BLUE)) });
  return out;
}

const HOSTILE = '# Epoch 1\n\n**loss** fell to `0.31`\n\n<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>\n' +
  '[click](javascript:window.__xss=3)';
const TABLE = '| lr | loss |\n|---|---|\n| 3e-4 | 0.31 |\n\nsee [the paper](https://example.com/paper)';

async function writeProto(server, batch) {
  const r = await server.request('POST', '/api/v1/write', writeRequest(batch), { 'Content-Type': 'application/x-protobuf' });
  assert.equal(r.status, 200, `protobuf write: ${r.status} ${r.text}`);
  const reply = JSON.parse(r.text);
  assert.deepEqual(reply.errors ?? [], [], `protobuf write errors: ${r.text}`);
}

const suite = browserSuite({
  setup: async (server) => {
    await server.write(Array.from({ length: 40 }, (_, step) => (
      { project: PROJECT, run: RUN, step, time: T0 + step, metrics: { loss: 2 - step / 40 } })));
    await writeProto(server, {
      project: PROJECT, run: RUN, histograms: histograms(), images: images(),
      texts: [
        { name: 'notes', step: 5, time: T0 + 5, value: HOSTILE },
        { name: 'notes', step: 25, time: T0 + 25, value: TABLE },
      ],
    });
  },
});

const detail = `/#/runs/${PROJECT}/${RUN}`;
const query = (page) => new URLSearchParams(new URL(page.url()).hash.split('?')[1] || '');

suite.test('histograms: heatmap, offset (later steps in front) and overlay views', async ({ open, snapshot }) => {
  const page = await open(detail);
  const hist = byTestId(page, 'histogram-chart', { metric: 'weights/fc1' });
  await hist.scrollIntoViewIfNeeded({ timeout: 10000 });
  await poll(async () => (await hist.getAttribute('data-steps')) === '10', { timeout: 10000, what: '10 histogram steps' });
  assert.equal(await hist.getAttribute('data-mode'), 'heatmap', 'the heatmap is the default view');

  /** The canvas' topmost coloured row over the columns of a value range (fractions of the plot). */
  const canvas = hist.locator('[data-testid="histogram-canvas"]');
  const peakRows = async () => {
    const tops = columnTops(await stableShot(canvas));
    const plot = { left: 46, width: tops.length - 46 - 64 }; // HistogramRidges' margins
    const top = (a, b) => Math.min(...tops.slice(Math.round(plot.left + a * plot.width), Math.round(plot.left + b * plot.width)));
    // the bell of step 0 is centred at 25% of the value range, that of step 90 at 75%
    return { first: top(0.18, 0.32), last: top(0.68, 0.82) };
  };

  await hist.locator('[data-testid="histogram-mode"][data-mode="offset"]').click();
  await poll(() => query(page).get('hist') === 'offset', { what: 'hist=offset in the URL' });
  await poll(async () => (await canvas.getAttribute('data-mode')) === 'offset', { what: 'the offset view drawn' });
  assert.equal(await canvas.getAttribute('data-ridges'), '10', 'a ridge line per step');
  const offset = await peakRows();
  console.log(`offset view: topmost ink of step 0's bell at row ${offset.first}, of step 90's at row ${offset.last}`);
  // step 0 at the back (top), step 90 in front (bottom): its peak stays far below step 0's
  assert.ok(offset.last - offset.first > 60, `later steps lower, in front: ${JSON.stringify(offset)}`);
  await snapshot(page, 'histogram-offset');

  await hist.locator('[data-testid="histogram-mode"][data-mode="overlay"]').click();
  await poll(async () => (await canvas.getAttribute('data-mode')) === 'overlay', { what: 'the overlay view drawn' });
  assert.equal(query(page).get('hist'), 'overlay');
  const overlay = await peakRows();
  console.log(`overlay view: topmost ink of step 0's bell at row ${overlay.first}, of step 90's at row ${overlay.last}`);
  // one baseline and one scale: bells of the same shape reach the same height
  assert.ok(Math.abs(overlay.last - overlay.first) <= 12, `equal peaks on one axis: ${JSON.stringify(overlay)}`);
  assert.ok(overlay.first < offset.last - 60, 'the overlay uses the whole height');
  await snapshot(page, 'histogram-overlay');

  await hist.locator('[data-testid="histogram-mode"][data-mode="heatmap"]').click();
  await poll(() => !query(page).has('hist'), { what: 'hist gone from the URL' });
  await hist.locator('.heatmap[data-ready="1"]').waitFor({ timeout: 10000 });
});

suite.test('images: the step slider snaps to steps with images; tags sharing a prefix side by side', async ({ open, snapshot }) => {
  const page = await open(detail);
  const panel = byTestId(page, 'image-panel', { tags: 'samples/pred,samples/truth' });
  await panel.scrollIntoViewIfNeeded({ timeout: 10000 });
  await poll(async () => (await panel.getAttribute('data-step')) === '30', { timeout: 10000, what: 'the newest step, 30' });
  assert.equal(await byTestId(page, 'image-panel', { tags: 'inputs' }).count(), 1, 'a panel of its own for "inputs"');

  const items = panel.locator('[data-testid="image-item"]');
  const shown = async () => items.evaluateAll((els) => els.map((e) => `${e.dataset.name}@${e.dataset.step}#${e.dataset.index}`));
  await poll(async () => (await shown()).length === 3, { what: '3 images at step 30' });
  assert.deepEqual(await shown(), ['samples/pred@30#0', 'samples/pred@30#1', 'samples/truth@30#0']);
  assert.deepEqual(await panel.locator('[data-testid="image-caption"]').allInnerTexts(),
    ['prediction at 30', 'second prediction', 'truth at 30']);

  // The bytes arrive (from /api/v1/blobs/<sha256>) and are the images written: red, green, blue.
  const imgs = items.locator('img');
  await poll(async () => (await imgs.evaluateAll((els) => els.every((e) => e.complete && e.naturalWidth === 16))),
    { what: 'the three images decoded, 16 px wide' });
  const colours = [];
  for (let i = 0; i < 3; i++) colours.push(meanColor(await imgs.nth(i).screenshot()));
  const dominant = colours.map(([r, g, b]) => (r > g && r > b ? 'red' : g > b ? 'green' : 'blue'));
  assert.deepEqual(dominant, ['red', 'green', 'blue'], `image colours ${JSON.stringify(colours)}`);

  // prediction beside ground truth: the two columns on one row, truth to the right
  const [pred, truth] = await Promise.all(['samples/pred', 'samples/truth'].map((n) =>
    panel.locator(`[data-testid="image-column"][data-name="${n}"]`).boundingBox()));
  assert.ok(truth.x >= pred.x + pred.width - 1 && Math.abs(truth.y - pred.y) < 4,
    `side by side: pred ${JSON.stringify(pred)}, truth ${JSON.stringify(truth)}`);
  await snapshot(page, 'images');

  // The slider moves over steps 10, 20, 30 only.
  const slider = panel.locator('[data-testid="image-step"]');
  await slider.fill('0');
  await poll(async () => (await panel.getAttribute('data-step')) === '10', { what: 'step 10 after moving the slider to the start' });
  await poll(async () => JSON.stringify(await shown()) === JSON.stringify(['samples/pred@10#0', 'samples/truth@10#0']),
    { what: 'the two images of step 10' });
  await slider.focus();
  await page.keyboard.press('ArrowRight');
  await poll(async () => (await panel.getAttribute('data-step')) === '20', { what: 'ArrowRight: the next step with images, 20' });
  assert.equal(await slider.getAttribute('data-step'), '20');
  assert.deepEqual(await shown(), ['samples/pred@20#0', 'samples/truth@20#0']);
});

suite.test('text: Markdown rendered without running markup; "as sent" shows the text itself', async ({ open, snapshot }) => {
  const page = await open(detail);
  const panel = byTestId(page, 'text-panel', { name: 'notes' });
  await panel.scrollIntoViewIfNeeded({ timeout: 10000 });
  await poll(async () => (await panel.getAttribute('data-step')) === '25', { timeout: 10000, what: 'the newest text, step 25' });
  const body = panel.locator('[data-testid="text-body"]');
  await body.locator('table').waitFor();
  assert.deepEqual(await body.locator('th').allInnerTexts(), ['lr', 'loss']);
  assert.deepEqual(await body.locator('td').allInnerTexts(), ['3e-4', '0.31']);
  assert.equal(await body.locator('a').getAttribute('href'), 'https://example.com/paper');

  await panel.locator('[data-testid="text-step"]').fill('0');
  await poll(async () => (await panel.getAttribute('data-step')) === '5', { what: 'step 5' });
  await body.locator('h3').waitFor();
  assert.equal(await body.locator('h3').innerText(), 'Epoch 1');
  assert.equal(await body.locator('strong').innerText(), 'loss');
  assert.equal(await body.locator('code').innerText(), '0.31');
  // the markup is text on the page: no element made of it, nothing run, no javascript: link
  assert.equal(await body.locator('img, script').count(), 0, 'no element from the logged markup');
  assert.match(await body.innerText(), /<img src=x onerror="window.__xss=1"><script>window.__xss=2<\/script>/);
  assert.equal(await body.locator('a').count(), 0, 'a javascript: link is not a link');
  await sleep(200);
  assert.equal(await page.evaluate(() => window.__xss), undefined, 'no logged script ran');
  await snapshot(page, 'text-markdown');

  await panel.locator('[data-testid="text-plain"]').check();
  await poll(() => query(page).get('text') === 'plain', { what: 'text=plain in the URL' });
  const pre = panel.locator('pre[data-testid="text-body"]');
  await pre.waitFor();
  assert.equal(await pre.evaluate((e) => e.textContent), HOSTILE, 'the text exactly as sent');
});
