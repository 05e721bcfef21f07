// The dashboard from 2 x 4 to a 192-rack pod in a real browser: for each of
// three fabrics (2 leaves x 4 spines; 8 x 8; a 3-tier clos3 of 2 pods of 192
// racks) it starts the sanitizer tierflowd (ports 18420-18422), keeps
// posting probe reports that make known link directions hot, drives
// Debian's chromium through playwright-core and prints TAP: the matrix has
// a cell per switch pair with the controller's numbers, measured and
// estimated cells differ (text, style, pixels), no two matrix labels
// overlap and every label fits its cell (from the DOM's boxes), drill-down
// lists the cell's directions and the flows on them, the history panel and
// the header's last action show what the rounds did, and screenshots (in
// tests/browser/artifacts/, not committed) show the hot cell red and the
// estimated cell hatched (their pixels are read back).
//
// Env: TF_ROOT, TF_BIN (sanitizer programs), TF_TOOLS (report_gen emits the
// topologies, interfaces named after the far end).

import { chromium } from 'playwright-core';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pngPixels } from './png.mjs';
import { ok, note, plan } from './tap.mjs';
import { redrawn, readNow, readOneNow } from './redraw.mjs';

const ROOT = process.env.TF_ROOT || path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const BIN = process.env.TF_BIN || path.join(ROOT, 'build/san/bin');
const TOOLS = process.env.TF_TOOLS || path.join(ROOT, 'build/tools');
const ART = path.join(ROOT, 'tests/browser/artifacts');
const CHROMIUM = process.env.TF_CHROMIUM || '/usr/bin/chromium';
const TOKEN = 'scale-token';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tf-scale-'));
let daemon = null, feeder = null, browser = null;
// Stops the daemon; its exit status (0: the sanitizers found nothing).
async function stopDaemon() {
  if (feeder) clearInterval(feeder);
  feeder = null;
  const d = daemon;
  daemon = null;
  if (!d) return null;
  if (d.exitCode === null) {
    d.kill('SIGTERM');
    await new Promise((r) => { const t = setTimeout(() => { d.kill('SIGKILL'); r(); }, 5000); d.once('exit', () => { clearTimeout(t); r(); }); });
  }
  return d.exitCode;
}
async function cleanup() {
  await stopDaemon();
  if (browser) await browser.close().catch(() => {});
  fs.rmSync(tmp, { recursive: true, force: true });
}
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { cleanup().finally(() => process.exit(1)); });

for (const [what, f] of [['tierflowd', path.join(BIN, 'tierflowd')], ['report_gen', path.join(TOOLS, 'report_gen')], ['chromium', CHROMIUM]]) {
  if (!fs.existsSync(f)) { ok(`${what} is there (${f})`, false, 'make san tools; scripts/deps.sh browser'); await cleanup(); process.exit(plan() || 1); }
}
fs.mkdirSync(ART, { recursive: true });

// ---- the three fabrics -------------------------------------------------------
// hot: the directions a probe reports at 97% with CE; flows: fat flows a
// probe reports (their other hops are estimated from them).
const F = (src, dst, sport, via, bps) => ({ src, dst, proto: 17, sport, dport: 4791, qp: sport, dscp: 26, via, bps, ce_frac: 0.03, fat: true });
const FABRICS = [
  { name: '2x4', gen: 'leafspine:leaves=2,spines=4,hosts=4,gbps=100', port: 18420, cells: 8,
    hot: [['L1', 'S1']], probes: ['L1', 'L2'],
    flows: { L1: [F('10.0.1.1', '10.0.2.1', 49152, 'S1', 4.8e10), F('10.0.1.2', '10.0.2.2', 49153, 'S1', 4.9e10)] },
    estCell: 'L2|S1', moves: true },
  { name: '8x8', gen: 'leafspine:leaves=8,spines=8,hosts=2,gbps=100', port: 18421, cells: 64,
    hot: [['L3', 'S5']], probes: ['L1', 'L2', 'L3', 'L4', 'L5', 'L6', 'L7', 'L8'],
    flows: { L3: [F('10.0.3.1', '10.0.6.1', 49152, 'S5', 5e10)] }, estCell: 'L6|S5', moves: false },
  { name: '3-tier pod', gen: 'clos3:pods=2,racks=192,hosts=1,spines=4,superspines=8', port: 18422, cells: 2 * 4 + 192 * 4,
    hot: [['S1', 'SS1'], ['L7', 'S3']], probes: ['S1', 'L7'], flows: {}, estCell: null, moves: false },
];

function ifOf(topo, from, to) {
  const l = topo.links.find((x) => (x.a === from && x.b === to) || (x.b === from && x.a === to));
  return l.a === from ? l.a_if : l.b_if;
}

function reports(fab, topo) {
  const ts = Date.now() / 1000;
  const gbps = (a, b) => topo.links.find((x) => (x.a === a && x.b === b) || (x.a === b && x.b === a)).gbps;
  return { reports: fab.probes.map((p) => ({
    probe: p, ts, interval_s: 1,
    links: fab.hot.filter(([a]) => a === p).map(([a, b]) => ({ if: ifOf(topo, a, b), tx_bps: 0.97 * gbps(a, b) * 1e9, drops: 0, ce_pkts: 100 }))
      .concat(topo.links.filter((x) => (x.a === p || x.b === p)).map((x) => (x.a === p ? x.b : x.a))
        .filter((far) => !fab.hot.some(([a, b]) => a === p && b === far)).slice(0, 64)
        .map((far) => ({ if: ifOf(topo, p, far), tx_bps: 1e9, drops: 0, ce_pkts: 0 }))),
    flows: (fab.flows[p] || []).map(({ via, ...f }) => ({ ...f, if: ifOf(topo, p, via), vlan: 0, bytes: Math.round(f.bps / 8), pkts: Math.round(f.bps / 8 / 4096), cnp: 1 })),
    stats: { pkts: 0, bytes: 0, unparsed: 0, truncated: 0, evicted: 0, pcap_drops: 0 },
  })) };
}

async function post(base, body) {
  const r = await fetch(`${base}/api/v1/reports`, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKEN}` }, body: JSON.stringify(body) });
  return r.status;
}

// In the page: every matrix label's box, its cell's box, and the pairs that
// intersect (sorted by top, compared while they can still meet).
const BOXES = () => {
  const labels = [...document.querySelectorAll('#matrix-box .mlabel')].map((e) => {
    const r = e.getBoundingClientRect(), c = e.closest('th,td').getBoundingClientRect(), cap = e.closest('caption');
    return { t: e.textContent, x: r.left, y: r.top, w: r.width, h: r.height, cx: c.left, cy: c.top, cw: c.width, ch: c.height, cap: !!cap };
  });
  const s = labels.slice().sort((a, b) => a.y - b.y);
  const overlaps = [];
  for (let i = 0; i < s.length; i++) {
    for (let j = i + 1; j < s.length && s[j].y < s[i].y + s[i].h; j++) {
      const a = s[i], b = s[j];
      if (a.x < b.x + b.w - 0.5 && b.x < a.x + a.w - 0.5 && a.y < b.y + b.h - 0.5 && b.y < a.y + a.h - 0.5) overlaps.push([a.t, b.t]);
    }
  }
  const outside = labels.filter((l) => l.x < l.cx - 0.5 || l.y < l.cy - 0.5 || l.x + l.w > l.cx + l.cw + 0.5 || l.y + l.h > l.cy + l.ch + 0.5).map((l) => l.t);
  return { count: labels.length, overlaps: overlaps.slice(0, 10), outside: outside.slice(0, 10), noverlap: overlaps.length, noutside: outside.length };
};

// The share of pixels near an RGB colour, and how many distinct colours.
function pixelStats(png, rgb) {
  const { width, height, data, channels } = pngPixels(png);
  let near = 0;
  const seen = new Set();
  for (let i = 0; i < width * height; i++) {
    const p = data.subarray(i * channels, i * channels + 3);
    if (Math.abs(p[0] - rgb[0]) + Math.abs(p[1] - rgb[1]) + Math.abs(p[2] - rgb[2]) < 60) near++;
    seen.add((p[0] >> 4) << 8 | (p[1] >> 4) << 4 | (p[2] >> 4));
  }
  return { near: near / (width * height), colours: seen.size };
}
const RED = [0xc4, 0x16, 0x1c];
// An element's screenshot and its computed background colour, taken again
// until the same node, at the same place on the page and in the same colour,
// is there before and after it. A poll's redraw replaces the whole matrix
// (and panels above it may change height): a screenshot taken across one
// clips whatever is at the place the old node was. Comparing the colour
// alone let one through that kept it: the hot cell read 0% of its red, 18
// colours of something else (a fresh-clone make test). The mark is a
// property of the node, so a redrawn cell is a new one. Errors a redraw
// causes (a detached node) are retried too (redrawn).
async function shotAndBg(page, sel, opts = {}) {
  const look = () => readOneNow(page, sel, (c) => {
    c.tfShot = c.tfShot || String(Math.random());
    const r = c.getBoundingClientRect(), m = getComputedStyle(c).backgroundColor.match(/\d+/g);
    return { mark: c.tfShot, at: [r.x + scrollX, r.y + scrollY, r.width, r.height], bg: m ? m.slice(0, 3).map(Number) : null };
  });
  for (let i = 0; ; i++) {
    const before = await look(), png = await redrawn(() => page.locator(sel).screenshot(opts)), after = await look();
    if (JSON.stringify(before) === JSON.stringify(after) || i >= 9) return { png, bg: after.bg || [0, 0, 0], tries: i + 1 };
  }
}
const shot = async (page, sel, opts = {}) => (await shotAndBg(page, sel, opts)).png;

browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });

for (const fab of FABRICS) {
  note(`---- ${fab.name}: ${fab.gen}`);
  const tfile = path.join(tmp, `${fab.port}.json`);
  const g = spawnSync(path.join(TOOLS, 'report_gen'), ['--topology', fab.gen, '--emit-topology', tfile]);
  if (!ok(`${fab.name}: report_gen emits the topology`, g.status === 0, String(g.stderr))) continue;
  const topo = JSON.parse(fs.readFileSync(tfile, 'utf8'));
  fs.writeFileSync(path.join(tmp, 'token'), `${TOKEN}\n`, { mode: 0o600 });
  let log = '';
  daemon = spawn(path.join(BIN, 'tierflowd'), ['--topology', tfile, '--listen', `127.0.0.1:${fab.port}`, '--backend', 'none',
    '--token-file', path.join(tmp, 'token'), '--interval', '1', '--web-dir', path.join(ROOT, 'web'),
    // Without moves, flows stay where the reports put them.
    ...(fab.moves ? [] : ['--set', 'thresholds.util=10', '--set', 'thresholds.ce_frac=1'])], { stdio: ['ignore', 'ignore', 'pipe'] });
  daemon.stderr.on('data', (d) => { log = (log + d).slice(-4000); });
  const base = `http://127.0.0.1:${fab.port}`;
  let up = false;
  for (let i = 0; i < 100 && !up; i++) { try { up = (await fetch(`${base}/api/v1/status`)).ok; } catch { await sleep(200); } }
  if (!ok(`${fab.name}: tierflowd answers on port ${fab.port}`, up, log)) { await stopDaemon(); continue; }
  const st = await post(base, reports(fab, topo));
  ok(`${fab.name}: the probe reports are accepted`, st === 200, st);
  feeder = setInterval(() => { post(base, reports(fab, topo)).catch(() => {}); }, 1000);
  if (fab.moves) await sleep(2500);   // a round or two, so that the history and the header have an action

  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  const jsErrors = [];
  page.on('pageerror', (e) => jsErrors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') jsErrors.push(m.text()); });
  await page.goto(`${base}/?poll=1500`);
  try {
    await page.waitForSelector('#matrix-box td[data-cell]', { timeout: 30000 });
    const [hf, ht] = fab.hot[0];
    const hotKey = topo.nodes.find((x) => x.name === hf).tier === 'leaf' ? `${hf}|${ht}` : null;
    // Wait until the hot cell shows the reports (the first poll may predate them).
    await page.waitForFunction((k) => { const c = document.querySelector(k); return c && Number(c.dataset.util) > 0.9; },
      fab.name === '3-tier pod' ? '#matrix-box td[data-cell="pod 1|plane 1"]' : `#matrix-box td[data-cell="${hotKey}"]`, { timeout: 20000 });
    const cells = await page.$$eval('#matrix-box td[data-cell]', (x) => x.length);
    ok(`${fab.name}: the matrix has a cell per switch pair (${fab.cells})`, cells === fab.cells, cells);

    const cellSel = fab.name === '3-tier pod' ? '#matrix-box td[data-cell="pod 1|plane 1"]' : `#matrix-box td[data-cell="${hotKey}"]`;
    const hot = await page.$eval(cellSel, (c) => ({ util: Number(c.dataset.util), m: c.dataset.measured, hot: c.dataset.hot, ce: c.dataset.ce, text: c.textContent, cls: c.className }));
    ok(`${fab.name}: the hot cell shows the measured 97%${fab.flows[hf] ? ' with CE (its flows are marked)' : ''}`, Math.abs(hot.util - 0.97) < 0.005 && hot.m === 'true' && hot.hot === '1' &&
      hot.text === (hot.ce === '1' ? '97%⚑' : '97%') && (hot.ce === '1') === Boolean(fab.flows[hf]) && hot.cls.includes('u4') && !hot.cls.includes('est'), hot);
    const hotPng = await shot(page, cellSel, { path: path.join(ART, `scale-${fab.name.replace(/\W+/g, '-')}-hot-cell.png`) });
    const hp = pixelStats(hotPng, RED);
    ok(`${fab.name}: the hot cell's screenshot is red (${(hp.near * 100).toFixed(0)}% of its pixels)`, hp.near > 0.5, hp);

    if (fab.estCell) {
      const est = await readOneNow(page, `#matrix-box td[data-cell="${fab.estCell}"]`, (c) => ({ util: Number(c.dataset.util), m: c.dataset.measured, text: c.textContent, cls: c.className, italic: getComputedStyle(c.querySelector('.mlabel')).fontStyle, bg: getComputedStyle(c).backgroundImage }));
      ok(`${fab.name}: ${fab.estCell} is estimated from flows: "~", italic, hatched`, est.m === 'false' && est.text.startsWith('~') && est.util > 0.4 &&
        est.italic === 'italic' && est.bg.includes('repeating-linear-gradient'), est);
      // A plain cell is mostly its background colour (the text covers a
      // little); stripes of white over it leave much less of it.
      const estSel = `#matrix-box td[data-cell="${fab.estCell}"]`;
      const e = await shotAndBg(page, estSel), m = await shotAndBg(page, cellSel);
      fs.writeFileSync(path.join(ART, `scale-${fab.name.replace(/\W+/g, '-')}-estimated-cell.png`), e.png);
      const es = pixelStats(e.png, e.bg), ps = pixelStats(m.png, m.bg);
      ok(`${fab.name}: the estimated cell's pixels are hatched (${(es.near * 100).toFixed(0)}% its background colour, the measured cell ${(ps.near * 100).toFixed(0)}%)`,
        es.near < 0.65 && ps.near > 0.7, { es, ps, bg: [e.bg, m.bg], tries: [e.tries, m.tries] });
    }

    const boxes = await page.evaluate(BOXES);
    ok(`${fab.name}: no two of the ${boxes.count} matrix labels overlap`, boxes.count > fab.cells && boxes.noverlap === 0, boxes);
    ok(`${fab.name}: every matrix label fits inside its cell`, boxes.noutside === 0, boxes);

    // Drill-down: the cell's directions and the flows on them.
    await page.click(cellSel);
    await page.waitForSelector('#matrix-detail tr[data-dir]', { timeout: 5000 });
    const det = await page.evaluate(() => ({ dirs: [...document.querySelectorAll('#matrix-detail tr[data-dir]')].map((r) => [r.dataset.dir, r.dataset.measured, r.textContent]),
      flows: [...document.querySelectorAll('#matrix-detail li[data-flow]')].map((l) => l.textContent) }));
    const want = fab.name === '3-tier pod' ? 'S1>SS1' : `${hf}>${ht}`;
    const d0 = det.dirs.find((x) => x[0] === want);
    ok(`${fab.name}: drill-down lists ${want} as measured at 97.0%`, d0 && d0[1] === 'true' && d0[2].includes('97.0%') && d0[2].includes('measured'), det.dirs);
    // Without moves, exactly the flows reported over it; with moves (2x4),
    // a round may have pinned one elsewhere: at least one, and only flows
    // whose path crosses it.
    const nflows = (fab.flows[hf] || []).filter((f) => f.via === ht).length;
    if (nflows) {
      ok(`${fab.name}: drill-down lists ${fab.moves ? 'the' : `the ${nflows}`} fat flow(s) on them`,
        (fab.moves ? det.flows.length >= 1 : det.flows.length === nflows) && det.flows.every((t) => t.includes(`${hf}>${ht}`)), det.flows);
    }

    if (fab.name === '3-tier pod') {
      ok('3-tier pod: the pod-level table comes first, 2 pods x 4 planes',
        await page.$$eval('#matrix-box table[data-view="pods"] td[data-cell]', (x) => x.length) === 8);
      const leafHot = await page.$eval('#matrix-box td[data-cell="L7|S3"]', (c) => c.dataset.util).catch(() => null);
      ok('3-tier pod: pod 1\'s leaf x spine table shows L7 -> S3 hot (192 rows)', Math.abs(Number(leafHot) - 0.97) < 0.005 &&
        await page.$$eval('#matrix-box table[data-view="leaves"] tbody tr', (x) => x.length) === 192, leafHot);
      await page.click('#matrix-box table[data-view="pods"] tr[data-row="pod 2"] th');
      await page.waitForFunction(() => /pod 2: leaves/.test(document.querySelector('#matrix-box table[data-view="leaves"] caption').textContent), null, { timeout: 5000 });
      const first = await page.$eval('#matrix-box table[data-view="leaves"] tbody tr', (r) => r.dataset.row);
      ok('3-tier pod: clicking "pod 2" shows pod 2\'s leaves', first === 'L193', first);
      const b2 = await page.evaluate(BOXES);
      ok('3-tier pod: pod 2\'s labels do not overlap either and fit their cells', b2.noverlap === 0 && b2.noutside === 0, b2);
      ok('3-tier pod: the fabric drawing gives way to the matrix (too many switches)',
        await page.isHidden('#fabric-scroll') && /matrix above/.test(await page.textContent('#fabric-hint')));
    } else {
      ok(`${fab.name}: the fabric drawing is kept`, await page.$$eval('#fabric-svg line.link', (x) => x.length) === topo.links.length * 2);
      const lines = await readNow(page, '#fabric-svg line.link', (x) => x.map((l) => [l.dataset.measured, getComputedStyle(l).strokeOpacity]));
      const est = lines.filter((l) => l[0] === 'false').map((l) => l[1]), meas = lines.filter((l) => l[0] === 'true').map((l) => l[1]);
      ok(`${fab.name}: in the drawing, estimated directions are faded and measured ones are not`, est.length > 0 && meas.length > 0 &&
        est.every((o) => Number(o) < 0.9) && meas.every((o) => Number(o) === 1), { est: est.length, meas: meas.length });
    }

    if (fab.moves) {
      await page.waitForFunction(() => document.getElementById('hdr-action').dataset.kind === 'rebalance', null, { timeout: 15000 });
      const act = await page.textContent('#hdr-action');
      ok(`${fab.name}: the header shows the last action, what and when`, /^Last action: moved \d+ flows? \(max ~\d+% → ~\d+%\) · \d+ s ago$/.test(act), act);
      await page.waitForSelector('#history-svg [data-annotation="rebalance"]', { timeout: 15000 });
      const h = await page.evaluate(() => ({ util: Number(document.querySelector('#history-svg [data-lane="util"]').dataset.latest),
        imb: Number(document.querySelector('#history-svg [data-lane="imbalance"]').dataset.latest),
        moves: Number(document.querySelector('#history-svg [data-lane="moves"]').dataset.latest),
        bars: document.querySelectorAll('#history-svg rect.bar.moves').length,
        notes: [...document.querySelectorAll('#history-notes li[data-kind]')].map((l) => l.dataset.kind) }));
      ok(`${fab.name}: history shows max utilisation ≥ 97%, the imbalance index, the moves as bars`, h.util >= 0.97 && h.imb > 1 && h.moves >= 1 && h.bars >= 1, h);
      ok(`${fab.name}: history lists the rebalance among its annotations`, h.notes.includes('rebalance'), h.notes);
      await shot(page, '#history', { path: path.join(ART, `scale-${fab.name.replace(/\W+/g, "-")}-history.png`) });
    }
    await shot(page, '#matrix', { path: path.join(ART, `scale-${fab.name.replace(/\W+/g, '-')}-matrix.png`) });
    await page.screenshot({ path: path.join(ART, `scale-${fab.name.replace(/\W+/g, '-')}-1280x800.png`) });
    ok(`${fab.name}: no JavaScript errors`, jsErrors.length === 0, jsErrors.join('\n'));
  } catch (e) {
    ok(`${fab.name}: the page works`, false, `${e.message.split('\n').slice(0, 6).join('\n')}\n${log.slice(-600)}`);
    await page.screenshot({ path: path.join(ART, `scale-${fab.name.replace(/\W+/g, '-')}-failed.png`) }).catch(() => {});
  }
  await ctx.close();
  const rc = await stopDaemon();
  ok(`${fab.name}: tierflowd exits cleanly on SIGTERM (sanitizers quiet)`, rc === 0, `exit ${rc}\n${log.slice(-1500)}`);
}

await cleanup();
process.exit(plan());
