// Utilisation matrix: GET /api/v1/topology as a leaf × spine table (two
// tiers) or, with superspines, a pod × spine-plane table over the spines'
// uplinks plus the leaf × spine table of one pod. One cell per switch pair,
// coloured and written with the higher utilisation of its link directions,
// so that it reads the same at 2 × 4 and at a 192-rack pod (rows scroll
// inside the card, headers stay). Clicking a cell (or Tab + Enter) drills
// down to its link directions and the fat flows on them (from the flows
// the page already fetched).
// Estimated loads (the sum of the flows' rates, no fresh probe counter)
// read "~97%" in italics on a hatched cell; measured ones are plain.
// Test hooks: [data-cell="ROW|COL"] with data-util, data-measured, data-hot,
// data-ce; every text is a span.mlabel; #matrix-detail [data-dir="FROM>TO"],
// [data-flow=ID].

import { utilStep, pct, bps, natCmp, el } from './fmt.js';
import { flowPath } from './flows.js';
import { isHot, isGray } from './fabric.js';

let selected = null;         // {view, key} of the opened cell, kept across polls
let pod = null;              // the pod whose leaf × spine table is shown

// Pods: the leaves and spines that leaf-spine links join (union-find), in
// the natural order of their first leaf; a spine's plane is its rank in its
// pod.
function pods(topo) {
  const tier = new Map(topo.nodes.map((n) => [n.name, n.tier]));
  const up = new Map();
  const find = (x) => { while (up.get(x) !== x) { up.set(x, up.get(up.get(x))); x = up.get(x); } return x; };
  for (const n of topo.nodes) if (n.tier === 'leaf' || n.tier === 'spine') up.set(n.name, n.name);
  for (const l of topo.links) if (up.has(l.a) && up.has(l.b)) up.set(find(l.a), find(l.b));
  const groups = new Map();
  for (const name of up.keys()) {
    const r = find(name);
    if (!groups.has(r)) groups.set(r, { leaves: [], spines: [] });
    groups.get(r)[tier.get(name) === 'leaf' ? 'leaves' : 'spines'].push(name);
  }
  const list = [...groups.values()].filter((g) => g.leaves.length && g.spines.length);
  for (const g of list) { g.leaves.sort(natCmp); g.spines.sort(natCmp); }
  list.sort((a, b) => natCmp(a.leaves[0], b.leaves[0]));
  list.forEach((g, i) => { g.name = `pod ${i + 1}`; });
  return list;
}

// A table: rows × cols, each cell the links between its row and column.
function model(rows, cols, links, rowOf, colOf) {
  const cells = new Map();
  for (const l of links) {
    const r = rowOf(l), c = colOf(l);
    if (r == null || c == null) continue;
    const k = `${r}|${c}`;
    if (!cells.has(k)) cells.set(k, []);
    cells.get(k).push(l);
  }
  return { rows, cols, cells };
}

function leafSpine(topo, g) {
  const leaves = new Set(g.leaves), spines = new Set(g.spines);
  const pick = (l, set) => (set.has(l.a) ? l.a : set.has(l.b) ? l.b : null);
  return model(g.leaves, g.spines, topo.links.filter((l) => pick(l, leaves) && pick(l, spines)),
    (l) => pick(l, leaves), (l) => pick(l, spines));
}

function podPlanes(topo, list) {
  const where = new Map();
  list.forEach((g) => g.spines.forEach((s, i) => where.set(s, [g.name, `plane ${i + 1}`])));
  const planes = Math.max(...list.map((g) => g.spines.length));
  const tier = new Map(topo.nodes.map((n) => [n.name, n.tier]));
  const uplinks = topo.links.filter((l) => (where.has(l.a) && tier.get(l.b) === 'superspine') || (where.has(l.b) && tier.get(l.a) === 'superspine'));
  const sp = (l) => where.get(where.has(l.a) ? l.a : l.b);
  return model(list.map((g) => g.name), Array.from({ length: planes }, (_, i) => `plane ${i + 1}`), uplinks,
    (l) => sp(l)[0], (l) => sp(l)[1]);
}

// The cell's summary: its highest direction, whether that one is measured,
// and whether any direction is hot, marked or down.
function summary(links) {
  let top = null, hot = false, ce = false, down = false, gray = false;
  for (const l of links) for (const d of l.dirs || []) {
    if (!top || d.util > top.util) top = d;
    hot ||= isHot(d);
    ce ||= d.ce_frac > 0;
    down ||= d.up === false;
    gray ||= isGray(d);
  }
  return { top, hot, ce, down, gray };
}

export function cellText(s) {
  if (!s.top) return '–';
  return `${s.top.measured === false ? '~' : ''}${pct(s.top.util)}${s.ce ? '⚑' : ''}${s.gray ? '⚠' : ''}${s.down ? '✗' : ''}`;
}

function table(view, m, caption, rowHead, colHead, onRow, pick) {
  const mk = (text, cls) => el('span', { class: `mlabel${cls ? ` ${cls}` : ''}`, text });
  const head = el('tr', {}, el('th', { class: 'corner', scope: 'col' }, mk(`${rowHead} \\ ${colHead}`)),
    ...m.cols.map((c) => el('th', { scope: 'col', 'data-col': c }, mk(c))));
  const body = m.rows.map((r) => el('tr', { 'data-row': r },
    el('th', { scope: 'row', class: onRow ? 'pick' : null, tabindex: onRow ? 0 : null, title: onRow ? `show the leaves of ${r}` : null },
      mk(r)),
    ...m.cols.map((c) => {
      const key = `${r}|${c}`;
      const links = m.cells.get(key);
      if (!links) return el('td', { class: 'none' });
      const s = summary(links);
      const est = s.top && s.top.measured === false;
      const title = `${r} · ${c}: highest ${pct(s.top && s.top.util, 1)} (${s.top ? `${s.top.from} → ${s.top.to}` : 'no data'}${est ? ', estimated from flows' : ', measured'})${s.ce ? ', CE marks' : ''}${s.gray ? ', a direction is suspect of a gray failure or drained' : ''}${s.down ? ', a direction is down' : ''}`;
      return el('td', {
        class: `cell ${utilStep(s.top && s.top.util).cls}${est ? ' est' : ''}${s.hot ? ' hot' : ''}${selected && selected.view === view && selected.key === key ? ' selected' : ''}`,
        'data-cell': key, 'data-util': s.top ? s.top.util : 0, 'data-measured': est ? 'false' : 'true',
        'data-hot': s.hot ? 1 : 0, 'data-ce': s.ce ? 1 : 0, 'data-gray': s.gray ? 1 : 0, tabindex: 0, role: 'button', title, 'aria-label': title,
      }, mk(cellText(s), est ? 'est' : null));
    })));
  const t = el('table', { class: 'matrix', 'data-view': view }, el('caption', { text: caption }), el('thead', {}, head), el('tbody', {}, ...body));
  const open = (target) => {
    const td = target.closest('td[data-cell]');
    if (td) return { key: td.dataset.cell };
    const th = target.closest('th.pick');
    return th && onRow ? { row: th.parentElement.dataset.row } : null;
  };
  t.onclick = (ev) => { const o = open(ev.target); if (o) pick(view, o); };
  t.onkeydown = (ev) => {
    if (ev.key !== 'Enter' && ev.key !== ' ') return;
    const o = open(ev.target);
    if (o) { ev.preventDefault(); pick(view, o); }
  };
  return t;
}

function detail(box, m, key, flows) {
  const links = m && m.cells.get(key);
  if (!links) { box.replaceChildren(el('p', { class: 'muted', text: 'Click a cell for its links and the fat flows on them.' })); return; }
  const dirs = links.flatMap((l) => (l.dirs || []).map((d) => ({ ...d, gbps: l.gbps })));
  const hops = new Set(dirs.map((d) => `${d.from}>${d.to}`));
  const on = ((flows && flows.flows) || []).filter((f) => (f.path || []).some((n, i, p) => i > 0 && hops.has(`${p[i - 1]}>${n}`)));
  const [r, c] = key.split('|');
  box.replaceChildren(
    el('h3', { text: `${r} · ${c}: ${links.length} link${links.length === 1 ? '' : 's'}` }),
    el('table', { class: 'dirs' },
      el('thead', {}, el('tr', {}, ...['direction', 'utilisation', 'rate', 'source', 'CE', 'fat flows', 'state'].map((h) => el('th', { text: h })))),
      el('tbody', {}, ...dirs.map((d) => el('tr', { 'data-dir': `${d.from}>${d.to}`, 'data-measured': d.measured === false ? 'false' : 'true' },
        el('td', { text: `${d.from} → ${d.to}` }),
        el('td', { class: `num${d.measured === false ? ' est' : ''}`, text: `${d.measured === false ? '~' : ''}${pct(d.util, 1)} of ${d.gbps} Gb/s` }),
        el('td', { class: 'num', text: bps(d.bps) }),
        el('td', { text: d.measured === false ? 'estimated (sum of flows)' : 'measured (probe counter)' }),
        el('td', { class: d.ce_frac > 0 ? 'ce' : null, text: d.ce_frac > 0 ? `⚑ ${pct(d.ce_frac, 1)}` : '–' }),
        el('td', { class: 'num', text: String(d.fat_flows || 0) }),
        el('td', { class: isGray(d) ? 'gray' : null, title: isGray(d) ? d.health.evidence : null,
          text: `${d.up === false ? `down (${d.down_reason || '?'})` : d.congested ? 'congested' : 'ok'}${d.health && d.health.suspect ? ` · gray suspect ${pct(d.health.confidence)}` : ''}` }))))),
    el('h3', { text: on.length ? `Fat flows on them (${on.length}${flows && flows.matched > on.length ? ` among the ${(flows.flows || []).length} fetched` : ''})` : 'No fat flow on them among the flows fetched.' }),
    on.length ? el('ul', { class: 'flows' }, ...on.slice(0, 50).map((f) => el('li', { 'data-flow': f.id },
      `${f.src}:${f.sport} → ${f.dst}:${f.dport} · ${f.class} · ${f.estimated ? '≈ ' : ''}${bps(f.bps)} · ${flowPath(f)}`))) : null,
  );
}

// Renders the matrix card; returns the number of cells drawn.
export function renderMatrix(box, detailBox, topo, flows) {
  const list = pods(topo);
  if (!list.length) { box.replaceChildren(el('p', { class: 'muted', text: 'No leaf-spine links in this topology.' })); detailBox.replaceChildren(); return 0; }
  const three = topo.nodes.some((n) => n.tier === 'superspine');
  if (!pod || !list.some((g) => g.name === pod)) pod = list[0].name;
  const views = [];
  if (three) views.push(['pods', podPlanes(topo, list), `Pods × spine planes: the links from each pod's spines up to the superspines (${list.length} pods)`, 'pod', 'plane', true]);
  const g = list.find((x) => x.name === pod);
  views.push(['leaves', leafSpine(topo, g), three ? `${pod}: leaves × spines (${g.leaves.length} × ${g.spines.length})` : `Leaves × spines (${g.leaves.length} × ${g.spines.length})`, 'leaf', 'spine', false]);
  const models = new Map(views.map(([v, m]) => [v, m]));
  const pick = (view, o) => {
    if (o.row) { pod = o.row; selected = null; }
    else {
      selected = { view, key: o.key };
      if (view === 'pods') pod = o.key.split('|')[0];
    }
    renderMatrix(box, detailBox, topo, flows);
  };
  box.replaceChildren(...views.map(([v, m, cap, rh, ch, onRow]) => el('div', { class: 'matrix-scroll' }, table(v, m, cap, rh, ch, onRow, pick))));
  if (selected && !models.get(selected.view)?.cells.has(selected.key)) selected = null;
  detail(detailBox, selected && models.get(selected.view), selected && selected.key, flows);
  return views.reduce((a, [, m]) => a + m.cells.size, 0);
}
