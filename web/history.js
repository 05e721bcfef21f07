// History panel: GET /api/v1/history (the controller keeps an hour in 10 s
// buckets) as three lanes over the same time axis: the highest link
// utilisation (with the 80% line), the imbalance index, and per bucket the
// flows moved (bars up) and the link directions down (bars down, black);
// every annotation (rebalance, link down, backend error, ...) is a
// numbered mark on the axis, listed below with its time and message.
// Test hooks: #history-svg [data-lane=util|imbalance|moves] with
// data-latest, [data-annotation=KIND], #history-notes li[data-kind].

import { pct, clock, svg, el, utilColour, HOT_UTIL } from './fmt.js';

const LANE_H = 64, GAP = 18, LEFT = 132, RIGHT = 12, TOP = 14, MARK_H = 16;
const NOTES_SHOWN = 8;

function lane(g, w, y, label, latest, name) {
  g.append(svg('text', { class: 'lane-label', x: 4, y: y + 12, 'data-lane-label': name }, label));
  g.append(svg('text', { class: 'lane-value', x: 4, y: y + 30, 'data-lane-value': name }, latest));
  g.append(svg('line', { class: 'axis', x1: LEFT, x2: w - RIGHT, y1: y + LANE_H, y2: y + LANE_H }));
}

// A step line: each bucket level over its own 10 s, so that even one
// bucket shows.
function polyline(buckets, step, x, yOf) {
  return buckets.flatMap((b) => [`${x(b.ts).toFixed(1)},${yOf(b).toFixed(1)}`, `${x(b.ts + step).toFixed(1)},${yOf(b).toFixed(1)}`]).join(' ');
}

// The newest value as a dot at the end of its line.
function dot(g, last, step, x, yOf, cls) {
  if (last) g.append(svg('circle', { class: `dot ${cls}`, cx: x(last.ts + step).toFixed(1), cy: yOf(last).toFixed(1), r: 3 }));
}

export function renderHistory(svgEl, notesEl, hist, width) {
  const buckets = (hist && hist.buckets) || [];
  const notes = (hist && hist.annotations) || [];
  const w = Math.max(360, width || 0);
  const h = TOP + MARK_H + 3 * (LANE_H + GAP);
  svgEl.setAttribute('viewBox', `0 0 ${w} ${h}`);
  svgEl.setAttribute('width', w);
  svgEl.setAttribute('height', h);
  const end = (hist && buckets.length ? buckets[buckets.length - 1].ts + hist.step_s : Date.now() / 1000);
  const start = end - ((hist && hist.window_s) || 3600);
  const x = (ts) => LEFT + ((ts - start) / (end - start)) * (w - LEFT - RIGHT);
  const step = (hist && hist.step_s) || 10;
  const g = svg('g');
  const last = buckets[buckets.length - 1];
  const y0 = TOP + MARK_H;

  // Lane 1: max utilisation, scaled to at least 100%.
  const umax = Math.max(1, ...buckets.map((b) => b.max_util));
  const yU = (b) => y0 + LANE_H - (b.max_util / umax) * LANE_H;
  lane(g, w, y0, 'max link utilisation', last ? pct(last.max_util) : '–', 'util');
  g.append(svg('line', { class: 'threshold', x1: LEFT, x2: w - RIGHT, y1: y0 + LANE_H - (HOT_UTIL / umax) * LANE_H, y2: y0 + LANE_H - (HOT_UTIL / umax) * LANE_H }));
  g.append(svg('polyline', { class: 'series', points: polyline(buckets, step, x, yU), stroke: utilColour(last ? last.max_util : 0),
    'data-lane': 'util', 'data-latest': last ? last.max_util : '' }));
  dot(g, last, step, x, yU, 'util');

  // Lane 2: imbalance index (1 = even).
  const y1 = y0 + LANE_H + GAP;
  const imax = Math.max(2, ...buckets.map((b) => b.imbalance));
  const yI = (b) => y1 + LANE_H - (b.imbalance / imax) * LANE_H;
  lane(g, w, y1, 'imbalance index', last ? last.imbalance.toFixed(2) : '–', 'imbalance');
  g.append(svg('line', { class: 'threshold even', x1: LEFT, x2: w - RIGHT, y1: y1 + LANE_H - LANE_H / imax, y2: y1 + LANE_H - LANE_H / imax }));
  g.append(svg('polyline', { class: 'series imbalance', points: polyline(buckets, step, x, yI), 'data-lane': 'imbalance', 'data-latest': last ? last.imbalance : '' }));
  dot(g, last, step, x, yI, 'imbalance');

  // Lane 3: moves up from the middle, link directions down below it.
  const y2 = y0 + 2 * (LANE_H + GAP), mid = y2 + LANE_H / 2;
  const mmax = Math.max(1, ...buckets.map((b) => b.moves)), dmax = Math.max(1, ...buckets.map((b) => b.down));
  const moved = buckets.reduce((a, b) => a + b.moves, 0), downNow = last ? last.down : 0;
  lane(g, w, y2, 'moves / down', `${moved} moved · ${downNow} down`, 'moves');
  const bw = Math.max(1, (w - LEFT - RIGHT) / 360 - 0.5);
  const bars = svg('g', { 'data-lane': 'moves', 'data-latest': moved });
  const bar = (cls, bx, y, height, title) => {
    const r = svg('rect', { class: `bar ${cls}`, x: bx.toFixed(1), width: bw, y, height });
    r.append(svg('title', {}, title));
    return r;
  };
  for (const b of buckets) {
    const hm = (b.moves / mmax) * (LANE_H / 2), hd = (b.down / dmax) * (LANE_H / 2);
    if (b.moves) bars.append(bar('moves', x(b.ts), mid - hm, hm, `${clock(b.ts)}: ${b.moves} moved`));
    if (b.down) bars.append(bar('down', x(b.ts), mid, hd, `${clock(b.ts)}: ${b.down} link direction(s) down`));
  }
  g.append(bars);
  g.append(svg('line', { class: 'axis', x1: LEFT, x2: w - RIGHT, y1: mid, y2: mid }));

  // Time axis labels and annotation marks.
  for (const ts of [start, start + (end - start) / 2, end]) {
    g.append(svg('text', { class: 'tick', x: x(ts), y: h - 2, 'text-anchor': ts === start ? 'start' : ts === end ? 'end' : 'middle' }, clock(ts)));
  }
  const shown = notes.filter((n) => n.ts >= start).slice(-NOTES_SHOWN * 4);
  shown.forEach((n, i) => {
    const mx = x(n.ts);
    const mark = svg('g', { class: `mark ${n.kind}`, 'data-annotation': n.kind, transform: `translate(${mx.toFixed(1)},${TOP})` });
    mark.append(svg('line', { x1: 0, x2: 0, y1: 0, y2: h - TOP - 14 }), svg('title', {}, `${clock(n.ts)} ${n.kind}: ${n.message}`));
    if (i >= shown.length - NOTES_SHOWN) mark.append(svg('text', { x: 2, y: 8 }, String(shown.length - i)));
    g.append(mark);
  });
  svgEl.replaceChildren(g);

  const recent = shown.slice(-NOTES_SHOWN).reverse();
  notesEl.replaceChildren(...(recent.length ? recent.map((n, i) => el('li', { 'data-kind': n.kind },
    el('b', { text: `${i + 1} ` }), `${clock(n.ts)} · ${n.kind.replace('_', ' ')} · ${n.message}`))
    : [el('li', { class: 'muted', text: 'Nothing happened in the last hour.' })]));
}
