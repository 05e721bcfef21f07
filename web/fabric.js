// Fabric picture: GET /api/v1/topology drawn as an SVG, one row per tier
// (top tier first), each link as two parallel half-offset lines, one per
// direction, coloured by utilisation, dashed when it saw ECN-CE, with its
// number as a label and as a <title> (hover) and in the detail line (tap).
// Test hooks: data-node="NAME", data-link="FROM>TO", data-label="FROM>TO",
// data-util (0..1), data-ce ("1" when CE was seen), data-hot.

import { utilColour, pct, bps, natCmp, svg, UTIL_STEPS, HOT_UTIL } from './fmt.js';

const TIER_ORDER = ['superspine', 'spine', 'leaf', 'host'];
const NODE_W = 52, NODE_H = 24, ROW_H = 120, PAD_X = 70, PAD_Y = 28, MIN_GAP = 66;
const OFFSET = 3.5;          // half the distance between the two direction lines
const LABEL_LIMIT = 64;      // above this many directions only hot ones get labels (the matrix has every number)
export const DRAW_MAX_SWITCHES = 80; // larger fabrics are shown by the matrix only

let selected = null;         // "FROM>TO" of the tapped direction, kept across redraws

export function renderLegend(box) {
  box.replaceChildren();
  for (const s of UTIL_STEPS) {
    const i = document.createElement('i');
    i.style.background = utilColour(s.max === Infinity ? 1 : s.max - 0.001);
    const sp = document.createElement('span');
    sp.append(i, s.label);
    box.append(sp);
  }
  const ce = document.createElement('span');
  ce.textContent = '- - - / ⚑ CE = ECN congestion marks';
  const est = document.createElement('span');
  est.className = 'est-sample';
  est.textContent = 'faded, ~97% = estimated from flows';
  box.append(ce, est);
}

// Rows top to bottom. The top row is in name order; every row below is sorted
// by the mean position of its neighbours above, so hosts sit under their leaf.
function layout(topo) {
  const tiers = [...new Set([...(topo.tiers || []).slice().reverse(), ...TIER_ORDER])]
    .filter((t) => topo.nodes.some((n) => n.tier === t))
    .sort((a, b) => rank(a) - rank(b));
  const nbrs = new Map(topo.nodes.map((n) => [n.name, []]));
  for (const l of topo.links) {
    if (nbrs.has(l.a) && nbrs.has(l.b)) { nbrs.get(l.a).push(l.b); nbrs.get(l.b).push(l.a); }
  }
  const pos = new Map();
  const rows = [];
  tiers.forEach((t, r) => {
    let row = topo.nodes.filter((n) => n.tier === t).map((n) => n.name).sort(natCmp);
    if (r > 0) {
      const key = new Map(row.map((name) => {
        const up = nbrs.get(name).filter((m) => pos.has(m)).map((m) => pos.get(m));
        return [name, up.length ? up.reduce((a, b) => a + b, 0) / up.length : Infinity];
      }));
      row = row.sort((a, b) => (key.get(a) - key.get(b)) || natCmp(a, b));
    }
    row.forEach((name, i) => pos.set(name, (i + 0.5) / row.length));
    rows.push({ tier: t, names: row });
  });
  return rows;

  function rank(t) { const i = TIER_ORDER.indexOf(t); return i < 0 ? TIER_ORDER.length : i; }
}

function dirText(d, gbps) {
  const parts = [`${d.from} → ${d.to}: ${pct(d.util, 1)} of ${gbps} Gb/s (${bps(d.bps)})`];
  if (d.ce_frac > 0) parts.push(`CE ${pct(d.ce_frac, 1)}`);
  if (d.fat_flows) parts.push(`${d.fat_flows} fat flow${d.fat_flows === 1 ? '' : 's'}`);
  if (d.up === false) parts.push(d.down_reason === 'drained' ? 'DRAINED' : 'DOWN');
  if (isGray(d)) parts.push(`gray failure suspect (confidence ${pct(d.health.confidence)}${d.health.evidence ? `: ${d.health.evidence}` : ''})`);
  if (d.measured === false) parts.push('estimated from its flows (no probe counter)');
  if (d.congested) parts.push('congested');
  return parts.join(' · ');
}

// Suspected of silently losing packets, or drained (docs/health.md).
export function isGray(d) { return !!d.health && (d.health.suspect || d.health.drain !== 'none'); }

export function isHot(d) { return d.congested || d.up === false || d.util >= HOT_UTIL || d.ce_frac > 0; }

// Above this many nodes the hosts (and their links) are left out, so that a
// 24K-GPU fabric stays a picture of its switches rather than 50k SVG nodes.
const MAX_NODES = 600;

export function renderFabric(svgEl, topo, detailEl, availWidth) {
  let hidden = 0;
  if (topo.nodes.length > MAX_NODES) {
    const hosts = new Set(topo.nodes.filter((x) => x.tier === 'host').map((x) => x.name));
    hidden = hosts.size;
    topo = { ...topo, nodes: topo.nodes.filter((x) => !hosts.has(x.name)), links: topo.links.filter((l) => !hosts.has(l.a) && !hosts.has(l.b)) };
  }
  svgEl.dataset.hiddenHosts = hidden;
  const rows = layout(topo);
  const widest = Math.max(1, ...rows.map((r) => r.names.length));
  const width = Math.max(availWidth || 0, 2 * PAD_X + widest * MIN_GAP);
  const height = 2 * PAD_Y + (rows.length - 1) * ROW_H + NODE_H;
  const xy = new Map();
  rows.forEach((r, ri) => {
    const span = (width - 2 * PAD_X) / r.names.length;
    r.names.forEach((name, i) => xy.set(name, [PAD_X + span * (i + 0.5), PAD_Y + NODE_H / 2 + ri * ROW_H]));
  });

  svgEl.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svgEl.setAttribute('width', width);
  svgEl.setAttribute('height', height);
  svgEl.style.minWidth = `${width}px`;
  const gLinks = svg('g', { class: 'links' });
  const gLabels = svg('g', { class: 'labels' });
  const gNodes = svg('g', { class: 'nodes' });
  const gTiers = svg('g', { class: 'tiers' });
  const dirCount = topo.links.length * 2;

  rows.forEach((r, ri) => {
    gTiers.append(svg('text', { class: 'tier-label', x: 6, y: PAD_Y + NODE_H / 2 + ri * ROW_H, 'dominant-baseline': 'central' }, r.tier));
  });

  const byKey = new Map();
  for (const l of topo.links) {
    const pa = xy.get(l.a), pb = xy.get(l.b);
    if (!pa || !pb) continue;
    const len = Math.hypot(pb[0] - pa[0], pb[1] - pa[1]) || 1;
    const nx = -(pb[1] - pa[1]) / len, ny = (pb[0] - pa[0]) / len;   // unit normal
    for (const d of l.dirs || []) {
      const fwd = d.from === l.a;
      const s = fwd ? pa : pb, e = fwd ? pb : pa;
      const sgn = fwd ? 1 : -1;
      const ox = nx * OFFSET * sgn, oy = ny * OFFSET * sgn;
      const key = `${d.from}>${d.to}`;
      const hot = isHot(d);
      const ce = d.ce_frac > 0;
      const text = dirText(d, l.gbps);
      byKey.set(key, text);
      const est = d.measured === false;
      const line = svg('line', {
        class: `link${hot ? ' hot' : ''}${est ? ' est' : ''}${isGray(d) ? ' gray' : ''}${key === selected ? ' selected' : ''}`,
        x1: s[0] + ox, y1: s[1] + oy, x2: e[0] + ox, y2: e[1] + oy,
        stroke: d.up === false ? '#000' : utilColour(d.util),
        'stroke-width': hot ? 5 : 3,
        'stroke-dasharray': d.up === false ? '2 4' : ce ? '7 3' : null,
        'data-link': key, 'data-health': d.health ? d.health.value : 0, 'data-util': d.util, 'data-ce': ce ? 1 : 0, 'data-hot': hot ? 1 : 0, 'data-measured': est ? 'false' : 'true',
        tabindex: 0, role: 'button', 'aria-label': text,
      });
      line.append(svg('title', {}, text));
      gLinks.append(line);
      // Wider invisible twin so that a finger can hit a 3-pixel line.
      const hit = svg('line', { x1: line.getAttribute('x1'), y1: line.getAttribute('y1'), x2: line.getAttribute('x2'), y2: line.getAttribute('y2'),
        stroke: 'transparent', 'stroke-width': 9, 'data-hit': key, style: 'cursor:pointer' });
      hit.append(svg('title', {}, text));
      gLinks.append(hit);

      if (dirCount <= LABEL_LIMIT || hot) {
        // Label sits a third of the way from the sender, on its own side.
        const t = 0.3;
        const lx = s[0] + (e[0] - s[0]) * t + nx * 9 * sgn, ly = s[1] + (e[1] - s[1]) * t + ny * 9 * sgn;
        const label = d.up === false ? (d.down_reason === 'drained' ? 'drained' : 'down') : isGray(d) ? `⚠ ${pct(d.util)}` : `${est ? '~' : ''}${pct(d.util)}${ce ? ' ⚑CE' : ''}`;
        gLabels.append(svg('text', { class: `lbl${ce ? ' ce' : ''}${est ? ' est' : ''}`, x: lx, y: ly, 'data-label': key }, label));
      }
    }
  }

  for (const n of topo.nodes) {
    const p = xy.get(n.name);
    if (!p) continue;
    const g = svg('g', { class: 'node', 'data-node': n.name, 'data-tier': n.tier, transform: `translate(${p[0]},${p[1]})` });
    const probe = n.probe && n.probe !== 'none' ? ` (probe ${n.probe})` : '';
    g.append(svg('title', {}, `${n.name} · ${n.tier}${n.addr ? ` · ${n.addr}` : ''}${n.prefix ? ` · ${n.prefix}` : ''}${probe}`));
    g.append(svg('rect', { x: -NODE_W / 2, y: -NODE_H / 2, width: NODE_W, height: NODE_H, rx: 4,
      'stroke-width': n.probe === 'stale' ? 2 : 1, 'stroke-dasharray': n.probe === 'stale' ? '3 2' : null }));
    g.append(svg('text', { x: 0, y: 0 }, n.name + (n.probe === 'stale' ? '?' : '')));
    gNodes.append(g);
  }

  svgEl.replaceChildren(gTiers, gLinks, gLabels, gNodes);

  const show = (key) => {
    selected = key;
    for (const l of svgEl.querySelectorAll('line.link')) l.classList.toggle('selected', l.dataset.link === key);
    detailEl.textContent = byKey.get(key) || 'Hover or tap a link for its numbers.';
  };
  svgEl.onclick = (ev) => {
    const t = ev.target.closest('[data-link],[data-hit]');
    if (t) show(t.getAttribute('data-link') || t.getAttribute('data-hit'));
  };
  svgEl.onkeydown = (ev) => {
    if ((ev.key === 'Enter' || ev.key === ' ') && ev.target.dataset && ev.target.dataset.link) { ev.preventDefault(); show(ev.target.dataset.link); }
  };
  if (selected && byKey.has(selected)) detailEl.textContent = byKey.get(selected);
}
