/*
 * The Latency Explorer: a latency histogram and per-request parallel
 * coordinates (one axis per subsystem's kernel time, then latency, bytes,
 * status) over the same requests.  Brushing bars of the histogram or a range
 * on any axis selects requests; the selection is one set of request indexes,
 * and both views are redrawn from it: the histogram stacks the selected
 * requests of each bin over the rest, the parallel axes carry the interval
 * that selects them.  Clicking a line shows that request's breakdown and,
 * when the data came from a trace, its calls.
 *
 * Data: ?data=URL (default /rscfl, httpd's accounting of its recent
 * requests), either httpd's /rscfl JSON or analyze --requests --json (what
 * mscope explore serves).  Histogram bins are log-spaced between the
 * smallest and the largest latency: edge i is min * (max/min)^(i/BINS), and
 * a latency belongs to the first bin whose upper edge is above it (the last
 * bin takes the maximum).  window.explorer exposes the state for tests.
 */
'use strict';
(function () {
  const BINS = 40;
  const TOP_LISTED = 10;
  const state = { data: null, edges: [], bins: [], selected: null, binRange: null, firstDrawMs: null,
                  shown: null };
  let histogram = null;
  let parallel = null;
  let resolveReady;
  const ready = new Promise((resolve) => { resolveReady = resolve; });

  /* ---- data -------------------------------------------------------- */

  function fromRscfl(doc) {
    const subsystems = [];
    const index = new Map();
    const requests = (doc.requests || []).map((r) => {
      const ns = [];
      for (const s of (r.kernel && r.kernel.subsystems) || []) {
        if (!index.has(s.name)) { index.set(s.name, subsystems.length); subsystems.push(s.name); }
        const i = index.get(s.name);
        ns[i] = (ns[i] || 0) + (s.exclusive_ns || 0);
      }
      return { id: r.id, pid: 0, start_ns: 0, latency_ns: r.latency_us * 1000, bytes: r.bytes,
               status: r.status, path: r.path, subsystem_ns: ns };
    });
    for (const r of requests) {
      for (let i = 0; i < subsystems.length; i++) r.subsystem_ns[i] = r.subsystem_ns[i] || 0;
    }
    const source = doc.accounting === false ? 'httpd /rscfl: accounting is off (run httpd -a)'
                                            : 'httpd /rscfl';
    return { source, subsystems, requests };
  }

  async function load() {
    const url = new URLSearchParams(window.location.search).get('data') || '/rscfl';
    const response = await fetch(url, { cache: 'no-store' });
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    const doc = await response.json();
    return Array.isArray(doc.subsystems) ? doc : fromRscfl(doc);
  }

  /* ---- histogram bins ------------------------------------------------ */

  /* The smallest and largest of values by a loop: Math.min(...values) passes
   * each value as an argument, and past about 120,000 of them the browser
   * throws (maximum call stack size exceeded) instead of drawing. */
  function extent(values) {
    let least = Infinity;
    let most = -Infinity;
    for (const v of values) {
      if (v < least) least = v;
      if (v > most) most = v;
    }
    return [least, most];
  }

  function makeEdges(latencies) {
    if (!latencies.length) return [0, 1];
    const [least, most] = extent(latencies);
    const low = Math.max(1, least);
    const high = Math.max(low + 1, most);
    const edges = [];
    for (let i = 0; i <= BINS; i++) edges.push(low * Math.pow(high / low, i / BINS));
    return edges;
  }

  function binOf(edges, value) {
    const last = edges.length - 2;
    for (let i = 0; i < last; i++) if (value < edges[i + 1]) return i;
    return last;
  }

  function makeBins() {
    const requests = state.data.requests;
    state.edges = makeEdges(requests.map((r) => r.latency_ns));
    state.bins = requests.map((r) => binOf(state.edges, r.latency_ns));
  }

  /* ---- formatting ------------------------------------------------------ */

  function formatNs(ns) {
    if (ns < 10e3) return `${Math.round(ns)}ns`;
    if (ns < 10e6) return `${(ns / 1e3).toFixed(1)}us`;
    if (ns < 10e9) return `${(ns / 1e6).toFixed(2)}ms`;
    return `${(ns / 1e9).toFixed(3)}s`;
  }

  function escapeHtml(text) {
    return String(text).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
  }

  /* ---- the two views --------------------------------------------------- */

  function binCounts(indexes) {
    const counts = new Array(state.edges.length - 1).fill(0);
    for (const i of indexes) counts[state.bins[i]]++;
    return counts;
  }

  function histogramOption() {
    const all = binCounts(state.data.requests.keys());
    const chosen = state.selected ? binCounts(state.selected) : all;
    const labels = all.map((_, i) => formatNs(state.edges[i]));
    return {
      animation: false,
      grid: { left: 50, right: 20, top: 30, bottom: 40 },
      tooltip: { trigger: 'axis' },
      toolbox: { feature: { brush: { type: ['lineX', 'clear'] } } },
      brush: { xAxisIndex: 0, brushType: 'lineX', brushMode: 'single', throttleType: 'debounce',
               throttleDelay: 100, outOfBrush: { colorAlpha: 1 } },
      xAxis: { type: 'category', data: labels, name: 'latency', nameLocation: 'middle',
               nameGap: 25 },
      yAxis: { type: 'value', name: 'requests' },
      series: [
        { id: 'selected', name: 'selected', type: 'bar', stack: 'all', data: chosen,
          itemStyle: { color: '#c44' }, barCategoryGap: '5%' },
        { id: 'other', name: 'not selected', type: 'bar', stack: 'all',
          data: all.map((n, i) => n - chosen[i]), itemStyle: { color: '#bbb' } },
      ],
    };
  }

  function axes() {
    const names = state.data.subsystems.map((s) => ({ id: `sub:${s}`, name: `${s} (us)` }));
    return names.concat([{ id: 'latency', name: 'latency (us)' }, { id: 'bytes', name: 'bytes' },
                         { id: 'status', name: 'status' }]);
  }

  function rows() {
    return state.data.requests.map((r) => r.subsystem_ns.map((ns) => ns / 1000)
      .concat([r.latency_ns / 1000, r.bytes, r.status]));
  }

  function parallelOption() {
    const list = axes();
    return {
      animation: false,
      parallel: { left: 60, right: 80, top: 40, bottom: 30 },
      parallelAxis: list.map((a, dim) => ({ dim, id: a.id, name: a.name, type: 'value',
                                            scale: a.id === 'status' })),
      series: [{ id: 'requests', type: 'parallel', data: rows(), smooth: false,
                 lineStyle: { width: 1, opacity: 0.35, color: '#36c' },
                 inactiveOpacity: 0.04, activeOpacity: 0.8, progressive: 2000,
                 emphasis: { lineStyle: { width: 3, opacity: 1 } } }],
    };
  }

  /* ---- selection ------------------------------------------------------- */

  /* The requests the parallel axes' intervals select, or null when no axis
   * has one (everything is selected). */
  function parallelActive() {
    const model = parallel.getModel();
    const brushed = model.findComponents({ mainType: 'parallelAxis' })
      .some((axis) => axis.activeIntervals && axis.activeIntervals.length);
    return brushed ? model.getSeriesByIndex(0).getRawIndicesByActiveState('active') : null;
  }

  function select(indexes) {
    state.selected = indexes;
    histogram.setOption({ series: histogramOption().series });
    showSummary();
  }

  /* Bins first..last of the histogram: their requests, and the latency axis
   * interval that selects exactly them.  ECharts repeats brushSelected after
   * each redraw of the histogram: the same range again changes nothing. */
  function selectBins(first, last) {
    if (state.binRange && state.binRange[0] === first && state.binRange[1] === last) return;
    state.binRange = [first, last];
    const chosen = [];
    state.bins.forEach((b, i) => { if (b >= first && b <= last) chosen.push(i); });
    if (!chosen.length) return;
    const [low, high] = extent(chosen.map((i) => state.data.requests[i].latency_ns / 1000));
    brushAxis('latency', low, high);
  }

  function brushAxis(id, low, high) {
    parallel.dispatchAction({ type: 'axisAreaSelect', parallelAxisId: id, intervals: [[low, high]] });
  }

  function clearSelection() {
    for (const a of axes()) {
      parallel.dispatchAction({ type: 'axisAreaSelect', parallelAxisId: a.id, intervals: [] });
    }
    histogram.dispatchAction({ type: 'brush', areas: [] });
    state.binRange = null;
    select(null);
  }

  /* ---- details --------------------------------------------------------- */

  function showSummary() {
    const requests = state.data.requests;
    const chosen = state.selected || [...requests.keys()];
    const totals = state.data.subsystems.map((_, s) => chosen.reduce((t, i) => t + requests[i].subsystem_ns[s], 0));
    const slowest = chosen.slice().sort((a, b) => requests[b].latency_ns - requests[a].latency_ns).slice(0, TOP_LISTED);
    let html = `<p>${chosen.length} of ${requests.length} requests selected; kernel time by subsystem: ` +
      state.data.subsystems.map((s, i) => `${escapeHtml(s)} ${formatNs(totals[i])}`).join(', ') + '</p>';
    html += '<table><tr><th>id</th><th>latency</th><th>bytes</th><th>status</th><th>path</th><th>top subsystem</th></tr>';
    for (const i of slowest) {
      const r = requests[i];
      const top = r.subsystem_ns.reduce((best, ns, s) => (ns > r.subsystem_ns[best] ? s : best), 0);
      html += `<tr data-index="${i}"><td>${r.id}</td><td>${formatNs(r.latency_ns)}</td><td>${r.bytes}</td>` +
        `<td>${r.status}</td><td class="name">${escapeHtml(r.path || '-')}</td>` +
        `<td class="name">${escapeHtml(state.data.subsystems[top] || '-')}</td></tr>`;
    }
    document.getElementById('summary').innerHTML = html + '</table>';
    for (const row of document.querySelectorAll('#summary tr[data-index]')) {
      row.addEventListener('click', () => showRequest(Number(row.dataset.index)));
    }
  }

  function showRequest(index) {
    const r = state.data.requests[index];
    state.shown = index;
    const biggest = Math.max(1, ...r.subsystem_ns);
    let html = `<h2>Request ${r.id} ${escapeHtml(r.path || '')}: ${formatNs(r.latency_ns)}, ` +
      `${r.bytes} bytes, status ${r.status}</h2><table><tr><th>subsystem</th><th>kernel time</th><th></th></tr>`;
    state.data.subsystems.forEach((s, i) => {
      html += `<tr><td class="name">${escapeHtml(s)}</td><td>${formatNs(r.subsystem_ns[i])}</td>` +
        `<td class="name"><span class="bar" style="width:${Math.round(200 * r.subsystem_ns[i] / biggest)}px"></span></td></tr>`;
    });
    html += '</table>';
    if (r.events && r.events.length) {
      const calls = r.events.slice().sort((a, b) => a.start_ns - b.start_ns);
      html += '<div class="calls"><table><tr><th>at</th><th>call</th><th>took</th></tr>' + calls.map((e) =>
        `<tr><td>${formatNs(e.start_ns)}</td><td class="name">${escapeHtml(e.name)}</td><td>${formatNs(e.duration_ns)}</td></tr>`).join('') + '</table></div>';
    } else if (!r.events) {
      html += '<p>No trace of this request (accounting results only).</p>';
    }
    document.getElementById('request').innerHTML = html;
  }

  /* ---- start ------------------------------------------------------------ */

  function drawn() {
    let pending = 2;
    const done = () => {
      if (--pending === 0 && state.firstDrawMs === null) {
        state.firstDrawMs = performance.now();
        resolveReady(state);
      }
    };
    histogram.on('finished', function once() { histogram.off('finished', once); done(); });
    parallel.on('finished', function once() { parallel.off('finished', once); done(); });
  }

  function connect() {
    histogram.on('brushSelected', (params) => {
      const area = params.batch[0] && params.batch[0].areas[0];
      if (area && area.coordRange) selectBins(area.coordRange[0], area.coordRange[1]);
    });
    parallel.on('axisAreaSelected', () => select(parallelActive()));
    parallel.on('click', (params) => showRequest(params.dataIndex));
    document.getElementById('clear').addEventListener('click', clearSelection);
    document.getElementById('reload').addEventListener('click', () => start());
    window.addEventListener('resize', () => { histogram.resize(); parallel.resize(); });
  }

  async function start() {
    state.data = await load();
    state.selected = null;
    state.binRange = null;
    makeBins();
    document.getElementById('status').textContent =
      `${state.data.requests.length} requests from ${state.data.source}`;
    if (!histogram) {
      histogram = echarts.init(document.getElementById('histogram'));
      parallel = echarts.init(document.getElementById('parallel'));
      drawn();
      connect();
    }
    histogram.setOption(histogramOption(), true);
    parallel.setOption(parallelOption(), true);
    showSummary();
  }

  window.explorer = {
    state, ready, brushAxis, selectBins, clearSelection, showRequest, binOf,
    brushHistogram: (first, last) => histogram.dispatchAction({
      type: 'brush', areas: [{ brushType: 'lineX', xAxisIndex: 0, coordRange: [first, last] }] }),
    histogramCounts: () => {
      const series = histogram.getOption().series;
      return { selected: series[0].data.slice(), other: series[1].data.slice() };
    },
    parallelActive: () => parallelActive(),
  };
  start().catch((error) => {
    document.getElementById('status').textContent = `no data: ${error.message}`;
  });
}());
