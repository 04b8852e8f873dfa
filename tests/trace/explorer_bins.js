// The Latency Explorer's own code (tools/explorer/explorer.js) run in node,
// without a browser: the page, ECharts and fetch are stand-ins that record
// what the page asks of them.  Why: how the page loads and bins its data
// does not need Chromium, and so can be checked on as many requests as a long
// capture gives (hundreds of thousands) in a moment, where drawing that many
// lines in headless Chromium takes minutes.  Prints one JSON object: the
// status line, the histogram's edges and the requests binned.
//
//     node explorer_bins.js DATA.json
'use strict';
const fs = require('fs');
const path = require('path');
const vm = require('vm');

const [dataPath] = process.argv.slice(2);
const source = fs.readFileSync(path.join(__dirname, '..', '..', 'tools', 'explorer', 'explorer.js'), 'utf8');
const doc = JSON.parse(fs.readFileSync(dataPath, 'utf8'));

function element() {
  return { textContent: '', innerHTML: '', addEventListener() {} };
}

function chart() {
  let option = {};
  return {
    on() {}, off() {}, resize() {}, dispatchAction() {},
    setOption(o) { option = Object.assign({}, option, o); },
    getOption() { return option; },
    getModel() { return { findComponents: () => [], getSeriesByIndex: () => null }; },
  };
}

const elements = {};
const context = {
  window: { location: { search: '?data=/data.json' }, addEventListener() {} },
  document: {
    getElementById: (id) => (elements[id] = elements[id] || element()),
    querySelectorAll: () => [],
  },
  echarts: { init: chart },
  fetch: async () => ({ ok: true, json: async () => doc }),
  URLSearchParams,
  performance: { now: () => 0 },
  console,
};
vm.createContext(context);
vm.runInContext(source, context);

setTimeout(() => {
  const state = context.window.explorer.state;
  const binned = state.bins.length;
  console.log(JSON.stringify({ status: elements.status ? elements.status.textContent : '',
                               edges: state.edges.length, binned,
                               inRange: state.bins.every((b) => b >= 0 && b < state.edges.length - 1) }));
}, 0);
