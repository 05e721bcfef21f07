// Path heatmap: for the chosen leaf pair, every equal-cost path from
// GET /api/v1/paths?src=&dst= as a row, one cell per poll (newest right),
// coloured by the path's utilisation (its hottest hop) with the latest number
// at the row's end. The controller keeps no history, so the page does: up to
// HISTORY samples per pair, lost on reload.
// Test hooks: data-path="A>B>C" on each row, data-latest (0..1).

import { utilColour, pct, clock, svg } from './fmt.js';

const HISTORY = 90, MIN_CELLS = 15, CELL_W = 8, CELL_H = 20, LABEL_W = 130, VALUE_W = 74;
const history = new Map();   // "SRC>DST" -> [{ts, paths: [{hops, util, ce_frac, congested, up, fat}]}]

export function pairKey(src, dst) { return `${src}>${dst}`; }

export function recordPaths(resp, ts) {
  const key = pairKey(resp.src, resp.dst);
  const h = history.get(key) || [];
  h.push({ ts, paths: (resp.paths || []).map((p) => ({
    hops: p.hops.join('>'), util: p.util, measured: p.measured !== false, ce_frac: p.ce_frac, congested: p.congested, up: p.up,
    fat: (p.fat_flows || []).length,
  })) });
  while (h.length > HISTORY) h.shift();
  history.set(key, h);
}

export function renderHeatmap(svgEl, noteEl, src, dst, availWidth) {
  // As many cells as fit the card (at least MIN_CELLS; the box scrolls).
  const cells = Math.max(MIN_CELLS, Math.min(HISTORY, Math.floor(((availWidth || 600) - LABEL_W - VALUE_W - 4) / CELL_W)));
  const h = (history.get(pairKey(src, dst)) || []).slice(-cells);
  const empty = () => { svgEl.replaceChildren(); svgEl.setAttribute('width', 0); svgEl.setAttribute('height', 0); };
  if (!src || !dst || src === dst) {
    empty();
    noteEl.textContent = 'Choose two different leaves.';
    return;
  }
  if (!h.length) {
    empty();
    noteEl.textContent = 'Waiting for the first sample…';
    return;
  }
  // Rows: every path seen in the window, in the order of the latest sample.
  const order = [];
  for (let i = h.length - 1; i >= 0; i--) for (const p of h[i].paths) if (!order.includes(p.hops)) order.push(p.hops);
  const width = LABEL_W + VALUE_W + cells * CELL_W;
  const height = order.length * (CELL_H + 2) + 18;
  svgEl.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svgEl.setAttribute('width', width);
  svgEl.setAttribute('height', height);
  const kids = [];
  const latest = h[h.length - 1];
  order.forEach((hops, r) => {
    const y = r * (CELL_H + 2);
    const last = latest.paths.find((p) => p.hops === hops);
    const g = svg('g', { class: 'hm-row', 'data-path': hops, 'data-latest': last ? last.util : '' });
    g.append(svg('text', { x: 0, y: y + CELL_H / 2 }, hops.length > 24 ? `…${hops.slice(-23)}` : hops));
    const v = last ? `${last.measured ? '' : '~'}${pct(last.util)}${last.ce_frac > 0 ? ' ⚑CE' : ''}${last.up === false ? ' down' : ''}` : '–';
    g.append(svg('text', { x: LABEL_W, y: y + CELL_H / 2, class: 'hm-value', 'font-weight': last && last.congested ? 'bold' : null,
      'font-style': last && !last.measured ? 'italic' : null }, v));
    const x0 = LABEL_W + VALUE_W + (cells - h.length) * CELL_W;
    h.forEach((s, i) => {
      const p = s.paths.find((q) => q.hops === hops);
      const rect = svg('rect', { x: x0 + i * CELL_W, y, width: CELL_W - 1, height: CELL_H,
        fill: p ? (p.up === false ? '#000' : utilColour(p.util)) : '#eee', 'fill-opacity': p && !p.measured ? 0.5 : null });
      rect.append(svg('title', {}, p ? `${clock(s.ts)} ${hops}: ${p.measured ? '' : 'estimated '}${pct(p.util, 1)}${p.ce_frac > 0 ? `, CE ${pct(p.ce_frac, 1)}` : ''}${p.fat ? `, ${p.fat} fat flow(s)` : ''}${p.up === false ? ', DOWN' : ''}`
        : `${clock(s.ts)} ${hops}: no data`));
      g.append(rect);
    });
    kids.push(g);
  });
  kids.push(svg('text', { x: LABEL_W, y: height - 6, fill: '#5d6b7c' }, 'latest'));
  kids.push(svg('text', { x: width - 2, y: height - 6, fill: '#5d6b7c', 'text-anchor': 'end' }, `${h.length} samples, newest right →`));
  svgEl.replaceChildren(...kids);
  noteEl.textContent = `${order.length} equal-cost path${order.length === 1 ? '' : 's'} ${src} → ${dst}; number and colour = utilisation of the path's hottest hop (~ and faded: estimated from the flows).`;
}
