// Drives the Latency Explorer in headless Chromium (puppeteer-core from the
// build's npm install) and prints one JSON object of what it found: console
// errors, whether the histogram's bars match the data, whether a brush on the
// latency axis selects exactly the requests in that range in both views,
// whether a click shows a request's breakdown (and its calls, for a trace),
// and the time to first draw.  The expectations are computed here from the
// data file itself, with the binning rule docs/ANALYSIS.md states.  DATA "-"
// takes the requests the page loaded (a live httpd's /rscfl, which changes
// with every request, the page's own too): the same checks on those.
//
//     node explorer_check.js URL DATA.json SCREENSHOT.png
'use strict';
const fs = require('fs');
const path = require('path');

const [url, dataPath, screenshot] = process.argv.slice(2);
const npm = path.join(__dirname, '..', '..', 'build', 'explorer', 'npm', 'node_modules');
const puppeteer = require(path.join(npm, 'puppeteer-core'));
const BINS = 40;

function expectedEdges(latencies) {
  const low = Math.max(1, latencies.reduce((a, v) => Math.min(a, v), Infinity));
  const high = Math.max(low + 1, latencies.reduce((a, v) => Math.max(a, v), -Infinity));
  return Array.from({ length: BINS + 1 }, (_, i) => low * Math.pow(high / low, i / BINS));
}

function binCounts(edges, latencies) {
  const counts = new Array(BINS).fill(0);
  for (const v of latencies) {
    let bin = BINS - 1;
    for (let i = 0; i < BINS - 1; i++) if (v < edges[i + 1]) { bin = i; break; }
    counts[bin]++;
  }
  return counts;
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

async function main() {
  let data = dataPath === '-' ? null : JSON.parse(fs.readFileSync(dataPath, 'utf8'));
  let latencies = data && data.requests.map((r) => r.latency_ns);
  const problems = [];
  const errors = [];
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
    page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
    page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()}`));
    page.on('request', (r) => {
      if (!r.url().startsWith(new URL(url).origin)) errors.push(`fetched from elsewhere: ${r.url()}`);
    });
    await page.goto(url, { waitUntil: 'load', timeout: 120000 });
    await page.waitForFunction(() => window.explorer && window.explorer.state.firstDrawMs !== null,
                               { timeout: 180000, polling: 100 });
    const firstDrawMs = await page.evaluate(() => window.explorer.state.firstDrawMs);
    if (!data) {
      data = await page.evaluate(() => window.explorer.state.data);
      latencies = data.requests.map((r) => r.latency_ns);
    }
    if (!data.requests.length) problems.push('no requests to show');
    const status = await page.$eval('#status', (e) => e.textContent);
    if (!status.startsWith(`${data.requests.length} requests`)) problems.push(`status line: ${status}`);

    // The histogram's bars: every bin's count, with nothing selected.
    const edges = expectedEdges(latencies);
    const pageEdges = await page.evaluate(() => window.explorer.state.edges);
    if (pageEdges.length !== edges.length ||
        pageEdges.some((e, i) => Math.abs(e - edges[i]) > 1e-9 * edges[i])) {
      problems.push(`bin edges differ: ${pageEdges.slice(0, 3)} vs ${edges.slice(0, 3)}`);
    }
    const counts = binCounts(edges, latencies);
    const bars = await page.evaluate(() => window.explorer.histogramCounts());
    if (!same(bars.selected, counts) || bars.other.some((n) => n !== 0)) {
      problems.push(`bars ${JSON.stringify(bars.selected)} vs data ${JSON.stringify(counts)}`);
    }
    if (counts.reduce((a, b) => a + b, 0) !== data.requests.length) problems.push('bins lose requests');

    // A brush on the latency axis: from the 40th to the 70th percentile.
    const sorted = latencies.slice().sort((a, b) => a - b);
    const low = sorted[Math.floor(sorted.length * 0.4)] / 1000;
    const high = sorted[Math.floor(sorted.length * 0.7)] / 1000;
    await page.evaluate((lo, hi) => window.explorer.brushAxis('latency', lo, hi), low, high);
    await page.waitForFunction(() => window.explorer.state.selected !== null,
                               { timeout: 60000, polling: 100 }).catch(() => {});
    const inRange = data.requests.map((r, i) => [r.latency_ns / 1000, i])
      .filter(([v]) => v >= low && v <= high).map(([, i]) => i);
    const active = await page.evaluate(() => window.explorer.parallelActive());
    const selected = await page.evaluate(() => window.explorer.state.selected);
    if (!active || !same(active.slice().sort((a, b) => a - b), inRange)) {
      problems.push(`parallel view selects ${active ? active.length : 'all'}, the range holds ${inRange.length}`);
    }
    if (!selected || !same(selected.slice().sort((a, b) => a - b), inRange)) {
      problems.push(`the selection holds ${selected ? selected.length : 'all'}, the range ${inRange.length}`);
    }
    const brushed = await page.evaluate(() => window.explorer.histogramCounts());
    const want = binCounts(edges, inRange.map((i) => latencies[i]));
    if (!same(brushed.selected, want) || !same(brushed.other, counts.map((n, i) => n - want[i]))) {
      problems.push(`histogram after the brush ${JSON.stringify(brushed.selected)} vs ${JSON.stringify(want)}`);
    }
    const summary = await page.$eval('#summary p', (e) => e.textContent);
    if (!summary.startsWith(`${inRange.length} of ${data.requests.length} requests selected`)) {
      problems.push(`summary: ${summary}`);
    }

    // A brush on the histogram's bars (the middle third of the bins) selects
    // their requests in both views.
    await page.evaluate(() => window.explorer.clearSelection());
    const first = Math.floor(BINS / 3), last = Math.floor((2 * BINS) / 3);
    const inBins = latencies.map((v, i) => [v, i]).filter(([v]) => {
      const bin = binCounts(edges, [v]).findIndex((n) => n === 1);
      return bin >= first && bin <= last;
    }).map(([, i]) => i);
    if (inBins.length) {
      await page.evaluate((a, b) => window.explorer.brushHistogram(a, b), first, last);
      // ECharts reports a brush after its debounce: wait for the page to take it.
      await page.waitForFunction((a, b) => {
        const range = window.explorer.state.binRange;
        return range && range[0] === a && range[1] === b && window.explorer.state.selected;
      }, { timeout: 120000, polling: 100 }, first, last).catch(() => {});
      const viaBars = await page.evaluate(() => window.explorer.state.selected);
      const viaLines = await page.evaluate(() => window.explorer.parallelActive());
      if (!viaBars || !same(viaBars.slice().sort((a, b) => a - b), inBins)) {
        problems.push(`histogram brush selects ${viaBars ? viaBars.length : 'all'}, its bins hold ${inBins.length}`);
      }
      if (!viaLines || !same(viaLines.slice().sort((a, b) => a - b), inBins)) {
        problems.push(`after the histogram brush the parallel view selects ${viaLines ? viaLines.length : 'all'} of ${inBins.length}`);
      }
    }

    // Back to the latency-axis selection, then a click on its slowest request
    // shows that request's breakdown.
    await page.evaluate(() => window.explorer.clearSelection());
    await page.evaluate((lo, hi) => window.explorer.brushAxis('latency', lo, hi), low, high);
    await page.waitForFunction(() => window.explorer.state.selected !== null,
                               { timeout: 60000, polling: 100 }).catch(() => {});
    await page.click('#summary tr[data-index]');
    const shown = await page.$eval('#request', (e) => e.textContent);
    const slowest = inRange.reduce((a, i) => (latencies[i] > latencies[a] ? i : a), inRange[0]);
    const request = data.requests[slowest];
    if (!shown.startsWith(`Request ${request.id}`)) problems.push(`click showed: ${shown.slice(0, 80)}`);
    for (const name of data.subsystems) if (!shown.includes(name)) problems.push(`breakdown lacks ${name}`);
    if (request.events && request.events.length && !shown.includes(request.events[0].name)) {
      problems.push('the request\'s calls are not shown');
    }
    await page.screenshot({ path: screenshot, fullPage: true });
    console.log(JSON.stringify({ problems, errors, firstDrawMs, requests: data.requests.length,
                                 selected: inRange.length }));
  } finally {
    await browser.close();
  }
}

main().catch((error) => {
  console.log(JSON.stringify({ problems: [`crashed: ${error.stack || error}`], errors: [] }));
  process.exit(1);
});
