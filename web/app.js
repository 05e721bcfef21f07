// tierflow dashboard entry point. Polls the controller every POLL_MS (the next
// poll starts only after the previous one finished, so a slow controller is
// never flooded), hands each response to its view, and shows a banner when
// the controller or some endpoint cannot be read. No framework, no build step.

import { get, q } from './api.js';
import { natCmp, clock } from './fmt.js';
import { renderFabric, renderLegend, DRAW_MAX_SWITCHES } from './fabric.js';
import { renderMatrix } from './matrix.js';
import { renderHistory } from './history.js';
import { recordPaths, renderHeatmap } from './heatmap.js';
import { initFlows, renderFlows, FLOWS_QUERY } from './flows.js';
import { renderHeader, renderAction, renderClasses, renderEvents } from './panels.js';
import { initRebalance } from './rebalance.js';

const POLL_MS = Number(new URLSearchParams(location.search).get('poll')) || 2000;
const $ = (id) => document.getElementById(id);
let lastTopo = null, lastFlows = null;
let lastGood = 0;
let timer = null;
let inflight = false, again = false;

function leaves(topo) {
  const names = topo.nodes.filter((n) => n.tier === 'leaf').map((n) => n.name).sort(natCmp);
  return names.length ? names : topo.nodes.filter((n) => n.tier !== 'host').map((n) => n.name).sort(natCmp);
}

function fillPairSelects(topo) {
  const names = leaves(topo);
  for (const [id, dflt] of [['path-src', names[0]], ['path-dst', names[1] || names[0]]]) {
    const s = $(id);
    const have = [...s.options].map((o) => o.value).join('\n');
    if (have === names.join('\n')) continue;
    const keep = s.value;
    s.replaceChildren(...names.map((n) => new Option(n, n)));
    s.value = names.includes(keep) ? keep : dflt || '';
  }
}

// The drawing is for small fabrics; past DRAW_MAX_SWITCHES the matrix is
// the view (a drawing of them is a tangle).
function drawFabric() {
  const box = $('fabric-scroll');
  const switches = lastTopo.nodes.filter((n) => n.tier !== 'host').length;
  const big = switches > DRAW_MAX_SWITCHES;
  box.hidden = big;
  $('link-detail').hidden = big;
  if (big) {
    $('fabric-svg').replaceChildren();
    $('fabric-hint').textContent = `The drawing is kept for fabrics of up to ${DRAW_MAX_SWITCHES} switches; this one has ${switches}: the matrix above shows it.`;
    $('fabric-hint').hidden = false;
    return;
  }
  renderFabric($('fabric-svg'), lastTopo, $('link-detail'), box.clientWidth);
  const hidden = Number($('fabric-svg').dataset.hiddenHosts || 0);
  const hints = [];
  if (hidden) hints.push(`${hidden} hosts and their links are not drawn (large fabric); the switches are.`);
  if (box.scrollWidth > box.clientWidth) hints.push('Scroll sideways to see the whole fabric.');
  $('fabric-hint').textContent = hints.join(' ');
  $('fabric-hint').hidden = !hints.length;
}

function banner(msg) {
  const b = $('banner');
  b.textContent = msg || '';
  b.hidden = !msg;
}

async function poll() {
  if (inflight) { again = true; return; }
  inflight = true;
  clearTimeout(timer);
  try { await pollOnce(); } finally {
    inflight = false;
    timer = setTimeout(poll, again ? 0 : POLL_MS);
    again = false;
  }
}

async function pollOnce() {
  const src = $('path-src').value, dst = $('path-dst').value;
  const wantPaths = src && dst && src !== dst;
  const names = ['status', 'topology', 'flows', 'classes', 'events', 'history', 'paths'];
  const res = await Promise.allSettled([
    get('status'), get('topology'), get(`flows${q(FLOWS_QUERY)}`), get('classes'),
    get(`events${q({ limit: 50 })}`), get('history'), wantPaths ? get(`paths${q({ src, dst })}`) : Promise.resolve(null),
  ]);
  const ok = Object.fromEntries(names.map((n, i) => [n, res[i].status === 'fulfilled' ? res[i].value : undefined]));
  const errs = names.map((n, i) => [n, res[i].reason]).filter(([, r]) => r);

  try {
    if (ok.status) renderHeader(ok.status);
    if (ok.history) {
      renderAction(ok.history.last_action, ok.status ? ok.status.now : Date.now() / 1000);
      renderHistory($('history-svg'), $('history-notes'), ok.history, $('history-scroll').clientWidth);
    }
    if (ok.flows) lastFlows = ok.flows;
    if (ok.topology) {
      lastTopo = ok.topology;
      fillPairSelects(lastTopo);
      renderMatrix($('matrix-box'), $('matrix-detail'), lastTopo, lastFlows);
      drawFabric();
    }
    if (ok.flows || ok.classes) renderFlows(ok.flows, ok.classes);
    if (ok.classes) renderClasses(ok.classes);
    if (ok.events) renderEvents(ok.events);
    if (ok.paths) recordPaths(ok.paths, ok.status ? ok.status.now : Date.now() / 1000);
    renderHeatmap($('heatmap-svg'), $('paths-note'), $('path-src').value, $('path-dst').value, $('heatmap-scroll').clientWidth);
  } catch (e) {
    // A response the page does not understand must not stop the polling.
    errs.push(['render', e]);
    console.error(e);
  }

  if (errs.length === 0) {
    lastGood = Date.now();
    banner('');
  } else if (errs.every(([, r]) => r && r.status === 0)) {
    banner(`Controller unreachable (${errs[0][1].message}); retrying every ${POLL_MS / 1000} s.${lastGood ? ` Showing data from ${clock(lastGood / 1000)}.` : ''}`);
  } else {
    banner(`Some data could not be read: ${errs.map(([n, r]) => `${n}: ${r.message || r}`).join('; ')}`);
  }
  if (lastGood) $('hdr-updated').textContent = `updated ${clock(lastGood / 1000)}`;
}

function start() {
  renderLegend($('legend'));
  initFlows();
  initRebalance(() => poll());
  for (const id of ['path-src', 'path-dst']) $(id).addEventListener('change', () => poll());
  let resizeT = null;
  window.addEventListener('resize', () => {
    clearTimeout(resizeT);
    resizeT = setTimeout(() => lastTopo && drawFabric(), 150);
  });
  poll();
}

start();
