// Formatting and colour helpers shared by the views. Every colour a view uses
// for utilisation comes from utilColour() so that the legend stays truthful,
// and every coloured thing also carries its number as text.

export const UTIL_STEPS = [
  { max: 0.0001, cls: 'u0', label: 'idle' },
  { max: 0.5, cls: 'u1', label: '< 50%' },
  { max: 0.8, cls: 'u2', label: '50–80%' },
  { max: 0.95, cls: 'u3', label: '80–95%' },
  { max: Infinity, cls: 'u4', label: '≥ 95%' },
];
const COLOURS = { u0: '#9aa7b5', u1: '#3d8c40', u2: '#c9a100', u3: '#e66a00', u4: '#c4161c' };

export function utilStep(u) {
  const v = Number(u) || 0;
  return UTIL_STEPS.find((s) => v < s.max) || UTIL_STEPS[UTIL_STEPS.length - 1];
}
export function utilColour(u) { return COLOURS[utilStep(u).cls]; }

// Links count as congested at 80% (the amber/orange boundary) or with CE marks.
export const HOT_UTIL = 0.8;

export function pct(u, digits = 0) {
  if (u == null || Number.isNaN(Number(u))) return '–';
  return `${(Number(u) * 100).toFixed(digits)}%`;
}

export function bps(v) {
  const n = Number(v);
  if (!Number.isFinite(n)) return '–';
  const units = [[1e12, 'Tb/s'], [1e9, 'Gb/s'], [1e6, 'Mb/s'], [1e3, 'kb/s']];
  for (const [d, u] of units) if (Math.abs(n) >= d) return `${(n / d).toFixed(n / d >= 100 ? 0 : 1)} ${u}`;
  return `${n.toFixed(0)} b/s`;
}

export function ago(ts, now = Date.now() / 1000) {
  if (!ts) return 'never';
  const s = Math.max(0, Math.round(now - Number(ts)));
  if (s < 90) return `${s} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
}

export function clock(ts) {
  if (!ts) return '–';
  return new Date(Number(ts) * 1000).toLocaleTimeString([], { hour12: false });
}

// "H10" after "H9": compare embedded numbers numerically.
export function natCmp(a, b) {
  return String(a).localeCompare(String(b), undefined, { numeric: true, sensitivity: 'base' });
}

export function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const k of kids) if (k != null) e.append(k);
  return e;
}

const SVGNS = 'http://www.w3.org/2000/svg';
export function svg(tag, attrs = {}, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v != null) e.setAttribute(k, String(v));
  if (text != null) e.textContent = text;
  return e;
}
