// Fat-flow table: GET /api/v1/flows?fat=true&limit=1000 (FLOWS_QUERY).
// Sorting (by rate, either way) and filtering (by class, by path) happen in
// the page so that they survive the next poll. A rate estimated from 1-in-N
// samples (estimated: true) reads "≈ 40.0 Gb/s", the sampling in its title.
// Test hooks: tr[data-flow=ID] with data-bps, data-class, data-path,
// data-estimated.

import { bps, pct, el, natCmp } from './fmt.js';

// The table sorts and filters what it fetched, so it asks for the 1000
// fastest fat flows explicitly (the API's default page is 100 flows); its
// count says "first 1000 fetched" when more matched.
export const FLOWS_QUERY = { fat: 'true', limit: 1000 };

const PROTO = { 6: 'TCP', 17: 'UDP' };
const ui = { desc: true, cls: '', path: '' };
let last = { flows: [], classes: [] };
let nodes = {};

export function initFlows(onChange) {
  nodes = {
    tbody: document.querySelector('#flows-table tbody'),
    sort: document.getElementById('sort-rate'),
    cls: document.getElementById('flow-class'),
    path: document.getElementById('flow-path'),
    count: document.getElementById('flows-count'),
  };
  nodes.sort.addEventListener('click', () => { ui.desc = !ui.desc; draw(); onChange && onChange(); });
  nodes.cls.addEventListener('change', () => { ui.cls = nodes.cls.value; draw(); });
  nodes.path.addEventListener('change', () => { ui.path = nodes.path.value; draw(); });
}

export function flowPath(f) { return (f.path || []).join('>'); }

function setOptions(select, values, current) {
  const want = ['', ...values];
  if (current && !want.includes(current)) want.push(current);   // keep a choice that vanished
  const have = [...select.options].map((o) => o.value);
  if (have.join('\n') === want.join('\n')) return;
  select.replaceChildren(...want.map((v) => el('option', { value: v, text: v || 'all' })));
  select.value = current;
}

export function renderFlows(flowsResp, classesResp) {
  last = { flows: (flowsResp && flowsResp.flows) || [], classes: (classesResp && classesResp.classes) || [], resp: flowsResp };
  draw();
}

function describe(f) {
  const proto = PROTO[f.proto] || `proto ${f.proto}`;
  const qp = f.qp ? ` QP ${f.qp}` : '';
  return `${f.src}:${f.sport} → ${f.dst}:${f.dport} ${proto}${qp}`;
}

const SOURCE = { sflow: 'sFlow', erspan: 'ERSPAN', pcap: 'capture' };

// The rate cell: exact rates as they are, estimates marked as such.
function rateCell(f) {
  if (!f.estimated) return el('td', { class: 'num', text: bps(f.bps) });
  const how = SOURCE[f.source] || f.source || 'sampled';
  return el('td', { class: 'num estimated', text: `≈ ${bps(f.bps)}`,
    title: `estimated from 1-in-${f.sampling} ${how} samples` });
}

function draw() {
  const flows = last.flows;
  const classNames = [...new Set([...last.classes.map((c) => c.name), ...flows.map((f) => f.class)])].filter(Boolean).sort(natCmp);
  const paths = [...new Set(flows.map(flowPath))].filter(Boolean).sort(natCmp);
  setOptions(nodes.cls, classNames, ui.cls);
  setOptions(nodes.path, paths, ui.path);

  const shown = flows
    .filter((f) => !ui.cls || f.class === ui.cls)
    .filter((f) => !ui.path || flowPath(f) === ui.path)
    .sort((a, b) => (ui.desc ? b.bps - a.bps : a.bps - b.bps) || natCmp(a.id, b.id));

  nodes.sort.textContent = `rate ${ui.desc ? '▼' : '▲'}`;
  nodes.sort.setAttribute('aria-sort', ui.desc ? 'descending' : 'ascending');
  nodes.sort.title = ui.desc ? 'highest first; click for lowest first' : 'lowest first; click for highest first';
  const total = last.resp ? last.resp.matched ?? flows.length : flows.length;
  nodes.count.textContent = `(${shown.length} shown of ${total}${last.resp && last.resp.returned < last.resp.matched ? `, first ${last.resp.returned} fetched` : ''})`;

  if (!shown.length) {
    nodes.tbody.replaceChildren(el('tr', {}, el('td', { class: 'empty', colspan: 7, text: flows.length ? 'No fat flow matches the filter.' : 'No fat flows reported.' })));
    return;
  }
  nodes.tbody.replaceChildren(...shown.map((f) => {
    const ce = f.ce_frac > 0;
    return el('tr', { 'data-flow': f.id, 'data-bps': f.bps, 'data-class': f.class, 'data-path': flowPath(f), 'data-estimated': f.estimated ? 'true' : 'false', class: f.stale ? 'muted' : null },
      el('td', { text: describe(f), title: `id ${f.id}${f.probe ? `, reported by ${f.probe} on ${f.if}` : ''}${f.stale ? ' (stale)' : ''}` }),
      el('td', { text: f.class || '–' }),
      el('td', { text: f.tier || '–' }),
      el('td', { text: flowPath(f) || 'unknown', title: f.path_index >= 0 ? `path #${f.path_index}` : 'path not known' }),
      rateCell(f),
      el('td', { class: `num${ce ? ' ce' : ''}`, text: ce ? `⚑ ${pct(f.ce_frac, 1)}` : '0%' }),
      el('td', { text: f.pinned ? `yes${f.moves ? ` (${f.moves} move${f.moves === 1 ? '' : 's'})` : ''}` : 'no' }),
    );
  }));
}
