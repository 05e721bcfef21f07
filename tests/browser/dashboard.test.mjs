// The dashboard in a real browser: starts the sanitizer tierflowd on a free
// loopback port with a generated 2-leaf x 4-spine topology and a token, keeps
// posting probe reports with one congested link (L1 -> S1 at 97%, CE marked,
// two colliding fat flows) and known fat flows, drives Debian's chromium
// through playwright-core, and prints TAP, one line per assertion.
// Screenshots go to tests/browser/artifacts/ (not committed).
//
// Env: TF_ROOT, TF_BIN (sanitizer programs), TF_TOOLS (report_gen makes the
// topology; the reports are written here so the flows are known exactly).

import { chromium } from 'playwright-core';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ok, note, plan } from './tap.mjs';
import { redrawn } from './redraw.mjs';

const ROOT = process.env.TF_ROOT || path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const BIN = process.env.TF_BIN || path.join(ROOT, 'build/san/bin');
const TIERFLOWD = path.join(BIN, 'tierflowd');
const ART = path.join(ROOT, 'tests/browser/artifacts');
const CHROMIUM = process.env.TF_CHROMIUM || '/usr/bin/chromium';

// ---- cleanup: everything this test started, by handle ----------------------
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tf-dash-'));
let daemon = null, ctx = null, feeder = null;
// The bgp step's ExaBGP speaker outlives a tierflowd killed hard (by
// design, docs/bgp.md): stopped by its PID file, if it is still ExaBGP.
const speakerDir = path.join(tmp, 'speaker');
function stopSpeaker() {
  try {
    const pid = Number(fs.readFileSync(path.join(speakerDir, 'exabgp.pid'), 'utf8').trim());
    if (pid > 0 && /exabgp/.test(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8'))) process.kill(pid, 'SIGTERM');
  } catch { /* none, or gone */ }
}
async function cleanup() {
  if (feeder) clearInterval(feeder);
  if (ctx) await ctx.close().catch(() => {});
  if (daemon && daemon.exitCode === null) {
    daemon.kill('SIGTERM');
    await new Promise((r) => { const t = setTimeout(() => { daemon.kill('SIGKILL'); r(); }, 5000); daemon.once('exit', () => { clearTimeout(t); r(); }); });
  }
  stopSpeaker();
  fs.rmSync(tmp, { recursive: true, force: true });
}
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { cleanup().finally(() => process.exit(1)); });

async function finish() {
  await cleanup();
  process.exit(plan());
}

// ---- fixtures --------------------------------------------------------------
// 2 leaves x 4 spines x 4 hosts per leaf, every interface named so that the
// probe reports below map onto link directions: leaf Lx uplink to Sy is
// "upY", its port to its k-th host is "hK"; hosts use "eth0".
const LEAVES = 2, SPINES = 4, HOSTS = 4, GBPS = 100;
function topology() {
  const nodes = [], links = [];
  for (let s = 1; s <= SPINES; s++) nodes.push({ name: `S${s}`, tier: 'spine' });
  for (let l = 1; l <= LEAVES; l++) {
    nodes.push({ name: `L${l}`, tier: 'leaf', prefix: `10.0.${l}.0/24` });
    for (let h = 1; h <= HOSTS; h++) {
      const hn = `H${(l - 1) * HOSTS + h}`;
      nodes.push({ name: hn, tier: 'host', addr: `10.0.${l}.${h}` });
      links.push({ a: hn, b: `L${l}`, gbps: GBPS, a_if: 'eth0', b_if: `h${h}` });
    }
    for (let s = 1; s <= SPINES; s++) links.push({ a: `L${l}`, b: `S${s}`, gbps: GBPS, a_if: `up${s}`, b_if: `l${l}` });
  }
  // /31 link addresses so that plans (nexthops) can be built.
  links.forEach((x, k) => { x.a_ip = `100.64.${k >> 7}.${(2 * k) & 255}`; x.b_ip = `100.64.${k >> 7}.${((2 * k) & 255) + 1}`; });
  return { name: 'dash-2x4', tiers: ['host', 'leaf', 'spine'], nodes, links };
}

// The fixture generator's topology when it is built (same names and
// addresses, interfaces named after the far end), else the one above.
function generatedTopology(file) {
  const gen = path.join(process.env.TF_TOOLS || '', 'report_gen');
  if (process.env.TF_TOOLS && fs.existsSync(gen)) {
    const r = spawnSync(gen, ['--topology', `leafspine:leaves=${LEAVES},spines=${SPINES},hosts=${HOSTS},gbps=${GBPS}`, '--emit-topology', file]);
    if (r.status === 0) return { topo: JSON.parse(fs.readFileSync(file, 'utf8')), by: 'report_gen --emit-topology' };
    note(`report_gen --emit-topology failed (${r.status}): ${r.stderr}`);
  }
  const t = topology();
  fs.writeFileSync(file, JSON.stringify(t, null, 1));
  return { topo: t, by: 'the test itself' };
}

// The interface on `from` that leads to `to`.
function ifOf(topo, from, to) {
  const l = topo.links.find((x) => (x.a === from && x.b === to) || (x.b === from && x.a === to));
  return l.a === from ? l.a_if : l.b_if;
}

// The known fat flows, all reported by L1's probe. F1 and F2 collide on
// L1 -> S1 (48 + 49 = 97 Gb/s, with CE), F3 is alone on L1 -> S2, F4 stays
// inside leaf L1 (F3's rate is an sFlow estimate, 1-in-1000). The last one
// is not fat and must not be listed.
const FLOWS = [
  { key: 'F1', src: '10.0.1.1', dst: '10.0.2.1', proto: 17, sport: 49152, dport: 4791, qp: 257, dscp: 26, via: 'S1', bps: 4.8e10, ce_frac: 0.03, fat: true },
  { key: 'F2', src: '10.0.1.2', dst: '10.0.2.2', proto: 17, sport: 49153, dport: 4791, qp: 258, dscp: 26, via: 'S1', bps: 4.9e10, ce_frac: 0.02, fat: true },
  { key: 'F3', src: '10.0.1.3', dst: '10.0.2.3', proto: 6, sport: 40001, dport: 5201, qp: 0, dscp: 0, via: 'S2', bps: 3.0e10, ce_frac: 0, fat: true, source: 'sflow', sampling: 1000 },
  { key: 'F4', src: '10.0.1.4', dst: '10.0.1.1', proto: 17, sport: 49160, dport: 4791, qp: 300, dscp: 26, via: 'H1', bps: 2.0e10, ce_frac: 0, fat: true },
  { key: 'small', src: '10.0.1.4', dst: '10.0.2.4', proto: 6, sport: 40100, dport: 22, qp: 0, dscp: 0, via: 'S3', bps: 1.0e8, ce_frac: 0, fat: false },
];
const FAT = FLOWS.filter((f) => f.fat);
const CONGESTED = { from: 'L1', to: 'S1', util: 0.97 };

function reports() {
  const ts = Date.now() / 1000;
  // A direction carries its flows, or 1 Gb/s of background when it has none.
  const tx = (node, far) => (node === 'L1' ? FLOWS.filter((f) => f.via === far).reduce((a, f) => a + f.bps, 0) : 0) || 1e9;
  const fars = (node) => TOPO.links.filter((x) => x.a === node || x.b === node).map((x) => (x.a === node ? x.b : x.a));
  const mk = (node) => ({
    probe: node, ts, interval_s: 1,
    links: fars(node).map((far) => ({ if: ifOf(TOPO, node, far), tx_bps: tx(node, far), rx_bps: 2e9, drops: 0, ce_pkts: far === 'S1' && node === 'L1' ? 1200 : 0 })),
    flows: node === 'L1' ? FLOWS.map(({ key, via, ...f }) => ({ ...f, if: ifOf(TOPO, 'L1', via), vlan: 0, bytes: Math.round(f.bps / 8), pkts: Math.round(f.bps / 8 / 4096), cnp: f.ce_frac ? 3 : 0 })) : [],
    stats: { pkts: 0, bytes: 0, unparsed: 0, truncated: 0, evicted: 0, pcap_drops: 0 },
  });
  return { reports: Array.from({ length: LEAVES }, (_, i) => mk(`L${i + 1}`)) };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, fn, ms = 15000, step = 200) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try { last = await fn(); if (last) return last; } catch (e) { last = e; }
    await sleep(step);
  }
  throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
}

// ---- main ------------------------------------------------------------------
if (!fs.existsSync(TIERFLOWD)) {
  ok(`tierflowd is built (${TIERFLOWD})`, false, 'build it first: make O=... san; this suite does not skip');
  await finish();
}
if (!fs.existsSync(CHROMIUM)) {
  ok(`chromium is installed (${CHROMIUM})`, false, 'scripts/deps.sh browser installs it');
  await finish();
}

const token = crypto.randomBytes(16).toString('hex');
const tokenFile = path.join(tmp, 'token');
fs.writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
const topoFile = path.join(tmp, 'topology.json');
const { topo: TOPO, by: topoBy } = generatedTopology(topoFile);
note(`topology ${TOPO.name} from ${topoBy}`);
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const logFile = path.join(tmp, 'tierflowd.log');
const logFd = fs.openSync(logFile, 'w');
daemon = spawn(TIERFLOWD, ['--topology', topoFile, '--listen', `127.0.0.1:${port}`, '--backend', 'none',
  '--token-file', tokenFile, '--interval', '60', '--web-dir', path.join(ROOT, 'web')],
{ stdio: ['ignore', logFd, logFd] });
const daemonLog = () => { try { return fs.readFileSync(logFile, 'utf8').split('\n').slice(-25).join('\n'); } catch { return ''; } };

async function api(method, p, body, tok = token) {
  const res = await fetch(base + p, { method, headers: { 'content-type': 'application/json', ...(tok ? { authorization: `Bearer ${tok}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, json, text };
}

try {
  await until('tierflowd to answer /api/v1/status', async () => {
    if (daemon.exitCode !== null) throw new Error(`tierflowd exited with ${daemon.exitCode}`);
    return (await api('GET', '/api/v1/status')).status === 200;
  }, 20000);
  ok('tierflowd starts and answers /api/v1/status', true);
} catch (e) {
  ok('tierflowd starts and answers /api/v1/status', false, `${e.message}\n${daemonLog()}`);
  await finish();
}

// Jobs give the flows distinct classes (dp between H1/H5 and H2/H6); the
// table tests work without it, so a refusal is only noted.
const job = await api('PUT', '/api/v1/jobs/dash', { ranks: ['H1', 'H2', 'H5', 'H6'], parallelism: [{ dim: 'tp', size: 2 }, { dim: 'dp', size: 2 }] });
if (job.status >= 300) note(`PUT /api/v1/jobs/dash: ${job.status} ${job.text}`);

const first = await api('POST', '/api/v1/reports', reports());
ok('probe reports are accepted', first.status === 200 && first.json && first.json.accepted === LEAVES && first.json.unmapped_ifs.length === 0,
  `${first.status} ${first.text}`);
// Keep the probes alive (stale after 3 intervals) and feed the heatmap.
feeder = setInterval(() => { api('POST', '/api/v1/reports', reports()).catch(() => {}); }, 700);

const apiFlows = (await api('GET', '/api/v1/flows?fat=true')).json;
const apiTopo = (await api('GET', '/api/v1/topology')).json;
const flowId = new Map();      // key -> controller id
for (const f of FAT) {
  const m = apiFlows && apiFlows.flows.find((x) => x.src === f.src && x.dst === f.dst && x.sport === f.sport && x.dport === f.dport);
  if (m) flowId.set(f.key, m);
}
ok('the controller lists the posted fat flows', flowId.size === FAT.length, apiFlows);

// ---- browser ---------------------------------------------------------------
fs.mkdirSync(ART, { recursive: true });
ctx = await chromium.launchPersistentContext(path.join(tmp, 'profile'), {
  executablePath: CHROMIUM, headless: true, viewport: { width: 1280, height: 800 },
  args: ['--no-sandbox', '--headless', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run'],
});
const page = ctx.pages()[0] || await ctx.newPage();
const jsErrors = [];
page.on('pageerror', (e) => jsErrors.push(e.message));
// Failed requests show up as console errors too; those are judged by status
// below instead (the one expected failure is the bad-token 401).
page.on('console', (m) => { if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) jsErrors.push(m.text()); });
const badResponses = [];
page.on('response', (r) => {
  if (r.status() >= 400 && !(r.status() === 401 && r.url().includes('/api/v1/rebalance'))) badResponses.push(`${r.status()} ${r.url()}`);
});
// The fat-flow table must not rely on the API's default page (100 flows).
const flowsUrls = [];
page.on('request', (r) => { if (r.url().includes('/api/v1/flows')) flowsUrls.push(new URL(r.url())); });
page.setDefaultTimeout(10000);

async function step(name, fn) {
  try { await fn(); } catch (e) { ok(name, false, e.message.split('\n').slice(0, 6).join('\n')); }
}

await page.goto(`${base}/?poll=1000`);
await step('page loads and draws the fabric', async () => {
  await page.waitForSelector('#fabric-svg [data-node]');
  ok('page loads and draws the fabric', true);
});

await step('every node is drawn', async () => {
  const drawn = await page.$$eval('#fabric-svg [data-node]', (els) => els.map((e) => e.getAttribute('data-node')));
  const missing = TOPO.nodes.map((x) => x.name).filter((x) => !drawn.includes(x));
  ok(`every node is drawn (${TOPO.nodes.length})`, missing.length === 0 && drawn.length === TOPO.nodes.length, `missing: ${missing.join(',')}; drawn ${drawn.length}`);
  // One evaluation for the three: separate ones can straddle a poll's
  // redraw (a fresh-clone make test once read H1 at y 0).
  const [ys, yl, yh] = await page.evaluate(() => ['S1', 'L1', 'H1'].map((n) =>
    document.querySelector(`[data-node="${n}"]`).getBoundingClientRect().y));
  ok('tiers are rows top to bottom: spine, leaf, host', ys < yl && yl < yh, { ys, yl, yh });
  const dirs = await page.$$eval('#fabric-svg line[data-link]', (els) => els.length);
  ok('both directions of every link are drawn', dirs === TOPO.links.length * 2, `${dirs} lines for ${TOPO.links.length} links`);
});

const hotKey = `${CONGESTED.from}>${CONGESTED.to}`;
await step('the congested link is highlighted with its number', async () => {
  const want = `${Math.round(CONGESTED.util * 100)}%`;
  await page.waitForFunction(([k, w]) => { const t = document.querySelector(`[data-label="${k}"]`); return t && t.textContent.startsWith(w); }, [hotKey, want]);
  const line = await page.$eval(`line[data-link="${hotKey}"]`, (e) => ({ hot: e.dataset.hot, ce: e.dataset.ce, stroke: e.getAttribute('stroke'), width: e.getAttribute('stroke-width'), title: e.querySelector('title').textContent }));
  const label = await page.textContent(`[data-label="${hotKey}"]`);
  ok(`congested link ${hotKey} is highlighted`, line.hot === '1' && Number(line.width) > 3, line);
  ok(`congested link ${hotKey} shows ${want}`, label.startsWith(want), label);
  ok(`congested link ${hotKey} is marked CE in text too`, line.ce === '1' && label.includes('CE'), { line, label });
  ok('its hover title has the exact number', line.title.includes(`${(CONGESTED.util * 100).toFixed(1)}%`) && line.title.includes('L1 → S1'), line.title);
  const cool = await page.$eval('line[data-link="S1>L1"]', (e) => ({ hot: e.dataset.hot, stroke: e.getAttribute('stroke') }));
  ok('the opposite direction S1 > L1 is not highlighted and has another colour', cool.hot === '0' && cool.stroke !== line.stroke, { cool, line });
  await redrawn(() => page.click(`line[data-hit="${hotKey}"]`, { force: true }));
  const detail = await page.textContent('#link-detail');
  ok('tapping the link shows its numbers', detail.includes('L1 → S1') && detail.includes('97.0%'), detail);
});

await step('the fat-flow table lists the posted flows', async () => {
  await page.waitForFunction((k) => document.querySelectorAll('#flows-table tr[data-flow]').length >= k, FAT.length);
  const rows = await page.$$eval('#flows-table tr[data-flow]', (els) => els.map((e) => ({ id: e.dataset.flow, bps: Number(e.dataset.bps), cls: e.dataset.class, path: e.dataset.path, text: e.textContent })));
  const missing = FAT.filter((f) => !rows.some((r) => r.text.includes(`${f.src}:${f.sport} → ${f.dst}:${f.dport}`)));
  ok(`the fat-flow table lists the ${FAT.length} posted fat flows`, missing.length === 0 && rows.length === FAT.length, { missing: missing.map((f) => f.key), rows: rows.length });
  ok('the non-fat flow is not listed', !rows.some((r) => r.text.includes('40100')));
  ok('the table asks for fat=true&limit=1000 explicitly', flowsUrls.length > 0 &&
    flowsUrls.every((u) => u.searchParams.get('fat') === 'true' && u.searchParams.get('limit') === '1000'), flowsUrls.slice(0, 3).map(String));
  const f2 = rows.find((r) => r.text.includes(':49153 →'));
  ok('a row shows rate, path and CE', f2 && f2.text.includes('49.0 Gb/s') && !f2.text.includes('≈') && /^H2>L1>S\d>L2>H6$/.test(f2.path) && f2.text.includes('⚑ 2.0%'), f2);
  const est = await page.$$eval('#flows-table tr[data-estimated="true"]', (els) => els.map((e) => ({ text: e.textContent, rate: [...e.querySelectorAll('td.num')].map((td) => ({ text: td.textContent, title: td.title })) })));
  ok('a sampled rate reads "≈ 30.0 Gb/s" with its sampling in the title', est.length === 1 && est[0].text.includes(':40001 →') &&
    est[0].rate.some((c) => c.text === '≈ 30.0 Gb/s' && c.title.includes('1-in-1000') && c.title.includes('sFlow')), est);
  const desc = rows.map((r) => r.bps);
  ok('rows are sorted by rate, highest first', desc.every((v, i) => i === 0 || desc[i - 1] >= v), desc);
  await page.click('#sort-rate');
  const asc = await page.$$eval('#flows-table tr[data-flow]', (els) => els.map((e) => Number(e.dataset.bps)));
  ok('clicking "rate" sorts lowest first', asc.length === FAT.length && asc.every((v, i) => i === 0 || asc[i - 1] <= v) && asc[0] < asc[asc.length - 1], asc);
  await page.click('#sort-rate');

  // Class filter: the class of F3 (whatever the controller classified it as).
  const cls = flowId.get('F3').class;
  const wantCls = FAT.filter((f) => flowId.get(f.key).class === cls).length;
  await page.selectOption('#flow-class', cls);
  const byCls = await page.$$eval('#flows-table tr[data-flow]', (els) => els.map((e) => e.dataset.class));
  ok(`filtering by class "${cls}" shows exactly its ${wantCls} flow(s)`, byCls.length === wantCls && byCls.every((c) => c === cls), byCls);
  await page.selectOption('#flow-class', '');

  // F3's path (the controller may have moved flows since the report).
  const f3 = await page.$$eval('#flows-table tr[data-flow]', (els) => els.map((e) => ({ path: e.dataset.path, text: e.textContent })));
  const p = (f3.find((r) => r.text.includes(':40001 →')) || {}).path;
  await page.selectOption('#flow-path', p);
  const byPath = await page.$$eval('#flows-table tr[data-flow]', (els) => els.map((e) => ({ path: e.dataset.path, text: e.textContent })));
  ok(`filtering by path ${p} shows only the flows on it`, byPath.length >= 1 && byPath.length < FAT.length && byPath.every((r) => r.path === p) &&
    byPath.some((r) => r.text.includes(':40001 →')), byPath);
  await page.selectOption('#flow-path', '');
  const all = await page.$$eval('#flows-table tr[data-flow]', (els) => els.length);
  ok('clearing the filters shows every fat flow again', all === FAT.length, all);
});

await step('classes and header', async () => {
  const classes = (await api('GET', '/api/v1/classes')).json.classes;
  const shown = await page.$$eval('#classes-table tr[data-class]', (els) => els.map((e) => e.dataset.class));
  ok('the classes view lists every class', classes.length > 0 && classes.every((c) => shown.includes(c.name)), { classes: classes.map((c) => c.name), shown });
  await page.waitForFunction(() => /2 alive/.test(document.getElementById('hdr-probes').textContent));
  ok('the header counts the live probes', true);
  const be = await page.textContent('#hdr-backend');
  ok('the header shows backend health', /none/.test(be) && /healthy/.test(be), be);
  ok('without HA (no ha.etcd_endpoints) the role chip is hidden', await page.isHidden('#hdr-ha'));
});

await step('the path heatmap shows the congested path', async () => {
  await page.selectOption('#path-src', 'L1');
  await page.selectOption('#path-dst', 'L2');
  await page.waitForFunction(() => document.querySelectorAll('#heatmap-svg [data-path]').length === 4 &&
    document.querySelector('#heatmap-svg [data-path="L1>S1>L2"] rect:nth-of-type(2)'));
  const rows = await page.$$eval('#heatmap-svg [data-path]', (els) => els.map((e) => ({ p: e.dataset.path, u: Number(e.dataset.latest), t: e.textContent })));
  const hot = rows.find((r) => r.p === 'L1>S1>L2');
  ok('4 equal-cost paths L1 → L2, each with history', rows.length === SPINES, rows);
  ok('the path over S1 shows 97% and CE', hot && Math.abs(hot.u - CONGESTED.util) < 0.005 && hot.t.includes('97%') && hot.t.includes('CE'), hot);
});

await step('a bad token is refused with a message', async () => {
  await page.click('#rebalance-btn');
  await page.fill('#rb-token', 'not-the-token');
  await page.click('#rb-preview');
  await page.waitForSelector('#rb-error:not([hidden])');
  const msg = await page.textContent('#rb-error');
  ok('a bad token shows "refused (401)" in the dialog', /refused/i.test(msg) && msg.includes('401'), msg);
  ok('no plan is shown and Apply stays disabled', await page.isHidden('#rb-plan') && await page.isDisabled('#rb-apply'));
});

await step('a dry-run rebalance shows the plan', async () => {
  await page.fill('#rb-token', token);
  await page.click('#rb-preview');
  await page.waitForSelector('#rb-plan:not([hidden])');
  const plan = await page.textContent('#rb-plan');
  ok('the dry run shows a plan marked as not applied', plan.includes('dry run') && /Max utilisation [\d.]+% → [\d.]+%/.test(plan), plan.slice(0, 400));
  const moves = await page.$$eval('#rb-moves li', (els) => els.map((e) => e.textContent));
  // The controller runs with a 60 s interval, so its own loop cannot have
  // moved the flows before this preview: the dialog must list the moves that
  // a dry run made now also finds.
  const dry = (await api('POST', '/api/v1/rebalance?dry_run=true')).json;
  note(`controller dry run now: moved ${dry && dry.moved}, max ${dry && dry.max_util_before} -> ${dry && dry.max_util_after}`);
  // The plan's "before" is the controller's estimate (fat-flow demand), not
  // the measured 97%: it must be what the controller says, and congested.
  const before = Number((plan.match(/Max utilisation ([\d.]+)%/) || [])[1]);
  ok('the plan shows the controller\'s max utilisation before', dry && Math.abs(before - dry.max_util_before * 100) < 0.1 && before >= 80, { before, dry: dry && dry.max_util_before });
  ok('the dry run finds flows to move', dry && dry.moved > 0, dry);
  // At least one flow leaves the congested S1; others may shift to make room.
  ok('the plan lists a move off S1', moves.length >= 1 && moves.every((m) => m.includes('⇒')) &&
     moves.some((m) => m.split('⇒')[0].includes('>S1>') && !m.split('⇒')[1].includes('>S1>')), moves);
  ok('Apply is enabled after the preview', !(await page.isDisabled('#rb-apply')));
  const switches = await page.$$('#rb-plan [data-switch]');
  ok('the plan has a per-switch section', plan.includes('Per-switch') && (switches.length >= 1 || plan.includes('No rule or route changes')), plan.slice(0, 600));
  const stored = await page.evaluate(() => ({ s: sessionStorage.getItem('tierflow.token'), l: JSON.stringify(localStorage) }));
  ok('the token is kept in sessionStorage only', stored.s === token && !stored.l.includes(token), { local: stored.l });
  await page.click('#rb-apply');
  await page.waitForFunction(() => /Applied|Done|Not applied/.test(document.querySelector('#rb-plan h3').textContent));
  const head = await page.textContent('#rb-plan h3');
  ok('applying runs the rebalance and reports the outcome', /Done|Applied/.test(head), await page.textContent('#rb-plan'));
  // Backend none touches no switch: the outcome and the header never say "Applied".
  ok('with backend none the outcome is not "Applied"', /^Done: plan computed and recorded/.test(head), head);
  await page.waitForFunction(() => /nothing programmed: backend none/.test(document.getElementById('hdr-rebalance').textContent), null, { timeout: 5000 });
  ok('the header says nothing was programmed', true);
  // The feeder's reports are looks after the first: the warm-up is over.
  ok('the header no longer says warming up', !/warming up/.test(await page.textContent('#hdr-rebalance')),
    await page.textContent('#hdr-rebalance'));
  await page.click('#rb-cancel');
  await page.waitForFunction(() => [...document.querySelectorAll('#events-table tr[data-kind]')].some((e) => e.dataset.kind === 'rebalance'));
  ok('the events view shows the rebalance', true);
});

await step('desktop screenshot', async () => {
  await page.screenshot({ path: path.join(ART, 'dashboard-1280x800.png') });
  await page.screenshot({ path: path.join(ART, 'dashboard-1280-full.png'), fullPage: true });
  ok('desktop screenshot saved', true);
});

await step('phone width', async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.reload();
  await page.waitForSelector('#flows-table tr[data-flow]');
  await page.waitForSelector('#fabric-svg [data-node]');
  await page.waitForSelector('#heatmap-svg [data-path] rect');
  const w = await page.evaluate(() => ({ doc: document.documentElement.scrollWidth, body: document.body.scrollWidth, vw: window.innerWidth }));
  ok('no horizontal page overflow at 390x844', w.doc <= w.vw && w.body <= w.vw, w);
  const btn = await page.locator('#rebalance-btn').boundingBox();
  ok('the rebalance button is on screen at phone width', btn && btn.x >= 0 && btn.x + btn.width <= 390, btn);
  await page.screenshot({ path: path.join(ART, 'dashboard-390x844.png'), fullPage: true });
  ok('phone screenshot saved', true);
});

ok('no JavaScript errors on the page', jsErrors.length === 0, jsErrors.join('\n'));
ok('no failed requests besides the bad-token 401', badResponses.length === 0, badResponses.slice(0, 10).join('\n'));

await step('an unreachable controller shows a banner', async () => {
  clearInterval(feeder); feeder = null;
  daemon.kill('SIGTERM');
  await new Promise((r) => (daemon.exitCode !== null ? r() : daemon.once('exit', r)));
  ok('tierflowd exits cleanly on SIGTERM (sanitizers quiet)', daemon.exitCode === 0, `exit ${daemon.exitCode} signal ${daemon.signalCode}\n${daemonLog()}`);
  await page.waitForSelector('#banner:not([hidden])', { timeout: 8000 });
  const b = await page.textContent('#banner');
  ok('the banner says the controller is unreachable', /unreachable/i.test(b), b);
});

// The bgp backend (docs/bgp.md): tierflowd drives a real ExaBGP speaker
// whose neighbors -- the switches' management addresses, on loopback here,
// where no BGP listens -- never come up. The header's backend chip shows
// the speaker running and its sessions, none established (warn), and its
// tooltip names every session with its state.
await step('the bgp backend: the speaker and its sessions in the header', async () => {
  const bgpTopo = JSON.parse(JSON.stringify(TOPO));
  let k = 0;
  for (const n of bgpTopo.nodes) {
    if (n.tier === 'host') continue;
    k++;
    n.mgmt = `127.0.0.${10 + k}`;
    n.asn = 65000 + k;
  }
  const bgpFile = path.join(tmp, 'topology-bgp.json');
  fs.writeFileSync(bgpFile, JSON.stringify(bgpTopo, null, 1));
  const port2 = await freePort();
  daemon = spawn(TIERFLOWD, ['--topology', bgpFile, '--listen', `127.0.0.1:${port2}`, '--backend', 'bgp',
    '--set', `backend_options.bgp_dir=${speakerDir}`, '--set', 'backend_options.bgp_local_address=127.0.0.1',
    '--token-file', tokenFile, '--interval', '60', '--withdraw-on-exit', '--web-dir', path.join(ROOT, 'web')],
  { stdio: ['ignore', logFd, logFd] });
  const st = await until('tierflowd with the bgp backend to show its speaker running', async () => {
    if (daemon.exitCode !== null) throw new Error(`tierflowd exited with ${daemon.exitCode}`);
    const r = await fetch(`http://127.0.0.1:${port2}/api/v1/status`).then((x) => x.json()).catch(() => null);
    return r && r.backend && r.backend.bgp && r.backend.bgp.speaker.running ? r : null;
  }, 20000).catch((e) => { throw new Error(`${e.message}\n${daemonLog()}`); });
  const sessions = st.backend.bgp.sessions;
  ok('/status lists one session per switch', sessions.length === k, JSON.stringify(sessions));
  await page.goto(`http://127.0.0.1:${port2}/?poll=1000`);
  await page.waitForFunction(() => /BGP \d+\/\d+ sessions/.test(document.getElementById('hdr-backend').textContent), null, { timeout: 10000 });
  const chipText = await page.textContent('#hdr-backend');
  ok('the backend chip says bgp and counts the sessions established of all', chipText.includes('bgp') &&
    chipText.includes(`BGP 0/${k} sessions`) && chipText.includes('0 routes'), chipText);
  const state = await page.getAttribute('#hdr-backend', 'data-state');
  ok('sessions down: the chip warns', state === 'warn' || state === 'bad', state);
  const title = await page.getAttribute('#hdr-backend', 'title');
  const named = bgpTopo.nodes.filter((n) => n.mgmt).every((n) => title.includes(`${n.name} (${n.mgmt}, AS ${n.asn}): `));
  ok('its tooltip names every session with its address, AS and state', named, title);
  daemon.kill('SIGTERM');
  await new Promise((r) => (daemon.exitCode !== null ? r() : daemon.once('exit', r)));
  ok('tierflowd with the bgp backend exits cleanly on SIGTERM', daemon.exitCode === 0, `exit ${daemon.exitCode}\n${daemonLog()}`);
  let pid = 0, alive = false;
  try { pid = Number(fs.readFileSync(path.join(speakerDir, 'exabgp.pid'), 'utf8').trim()); } catch { /* removed on exit */ }
  try { alive = pid > 0 && /exabgp/.test(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8')); } catch { /* gone */ }
  ok('--withdraw-on-exit stopped the speaker', !alive, `pid ${pid}`);
});

await finish();
