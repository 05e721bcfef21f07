// "Rebalance now": ask for the token, POST /api/v1/rebalance?dry_run=true,
// show the plan (moves, per-switch rules and routes, max utilisation before
// → after), and only on "Apply plan" POST /api/v1/rebalance for real. A 401
// shows the controller's message in the dialog and forgets the saved token.

import { get, post, savedToken, saveToken } from './api.js';
import { bps, pct, el } from './fmt.js';

let onApplied = () => {};

export function initRebalance(afterApply) {
  onApplied = afterApply;
  const $ = (id) => document.getElementById(id);
  const dlg = $('rebalance-dialog');
  $('rebalance-btn').addEventListener('click', () => {
    $('rb-token').value = savedToken();
    reset();
    dlg.showModal();
    $('rb-token').focus();
  });
  $('rb-cancel').addEventListener('click', () => dlg.close());
  $('rb-preview').addEventListener('click', () => run(true));
  $('rb-apply').addEventListener('click', () => run(false));
  $('rb-token').addEventListener('input', () => { $('rb-apply').disabled = true; });
  $('rb-form').addEventListener('submit', (ev) => { ev.preventDefault(); run(true); });
}

function reset() {
  const $ = (id) => document.getElementById(id);
  $('rb-error').hidden = true;
  $('rb-plan').hidden = true;
  $('rb-plan').replaceChildren();
  $('rb-apply').disabled = true;
}

function fail(msg) {
  const e = document.getElementById('rb-error');
  e.textContent = msg;
  e.hidden = false;
}

async function run(dry) {
  const $ = (id) => document.getElementById(id);
  const token = $('rb-token').value.trim();
  $('rb-error').hidden = true;
  $('rb-preview').disabled = true;
  $('rb-apply').disabled = true;
  try {
    // What is installed now, to show the plan as changes; optional.
    const current = dry ? await get('routes').catch(() => null) : null;
    const res = await post(`rebalance${dry ? '?dry_run=true' : ''}`, token);
    saveToken(token);
    showPlan(res, dry, current);
    if (dry) $('rb-apply').disabled = res.moved === 0 && changes(res.plan, current).length === 0;
    else onApplied();
  } catch (e) {
    if (e.status === 401) {
      saveToken('');
      fail(`Token refused (401 ${e.code}): ${e.message}. Check the token in tierflowd's --token-file.`);
    } else if (e.status === 0) {
      fail(`Controller unreachable: ${e.message}.`);
    } else {
      fail(`Rebalance failed (${e.status} ${e.code}): ${e.message}`);
    }
  } finally {
    $('rb-preview').disabled = false;
  }
}

function ruleText(r) {
  const m = [];
  if (r.ipproto) m.push(`ipproto ${r.ipproto === 6 ? 'tcp' : r.ipproto === 17 ? 'udp' : r.ipproto}`);
  if (r.src) m.push(`from ${r.src}`);
  if (r.dst) m.push(`to ${r.dst}`);
  if (r.sport) m.push(`sport ${r.sport}`);
  if (r.dport) m.push(`dport ${r.dport}`);
  if (r.fwmark) m.push(`fwmark 0x${r.fwmark.toString(16)}${r.fwmask && r.fwmask !== 0xffffffff ? `/0x${r.fwmask.toString(16)}` : ''}`);
  if (r.dscp !== null && r.dscp !== undefined) m.push(`dscp ${r.dscp}`);  // null: no DSCP selector; 0 is a value
  return `rule prio ${r.prio} ${m.join(' ')} → table ${r.table}`;
}

function routeText(r) {
  const nh = r.nexthops.map((n) => `via ${n.via}${n.dev ? ` dev ${n.dev}` : ''}${n.weight ? ` weight ${n.weight}` : ''}`).join(', ');
  return `route ${r.dst} table ${r.table}: ${nh}`;
}

// The plan is the full desired state; against GET /api/v1/routes it becomes
// per-switch additions (+) and removals (−). Without it, list the whole plan.
function changes(plan, current) {
  const want = new Map(((plan && plan.switches) || []).map((s) => [s.node, s]));
  if (!current) {
    return [...want.values()].filter((s) => s.rules.length || s.routes.length).map((s) => ({ node: s.node,
      items: [...s.rules.map((r) => ['', ruleText(r)]), ...s.routes.map((r) => ['', routeText(r)])] }));
  }
  const have = new Map((current.switches || []).map((s) => [s.node, s]));
  const out = [];
  for (const node of [...new Set([...want.keys(), ...have.keys()])].sort()) {
    const w = want.get(node) || { rules: [], routes: [] }, h = have.get(node) || { rules: [], routes: [] };
    const wt = [...w.rules.map(ruleText), ...w.routes.map(routeText)];
    const ht = [...h.rules.map(ruleText), ...h.routes.map(routeText)];
    const items = [...wt.filter((t) => !ht.includes(t)).map((t) => ['+', t]), ...ht.filter((t) => !wt.includes(t)).map((t) => ['−', t])];
    if (items.length) out.push({ node, items });
  }
  return out;
}

function showPlan(res, dry, current) {
  const box = document.getElementById('rb-plan');
  const kids = [];
  const head = dry ? 'Plan (dry run — nothing applied yet)'
    : res.applied ? 'Applied'
      : res.error ? 'Not applied'
        : 'Done: plan computed and recorded (this backend does not program switches)';
  kids.push(el('h3', { text: head }));
  kids.push(el('p', { 'data-summary': '1', text:
    `Max utilisation ${pct(res.max_util_before, 1)} → ${pct(res.max_util_after, 1)} (estimated from the flows' demand) · ${res.moved} flow${res.moved === 1 ? '' : 's'} ${dry ? 'to move' : 'moved'} · ${res.congested.length} congested direction${res.congested.length === 1 ? '' : 's'}` }));
  if (res.error) kids.push(el('p', { class: 'error', text: res.error }));
  if (res.congested.length) {
    kids.push(el('h3', { text: 'Congested' }));
    kids.push(el('ul', {}, ...res.congested.map((c) => el('li', {
      text: `${c.from} → ${c.to}: ${pct(c.util, 1)}${c.ce_frac > 0 ? `, CE ${pct(c.ce_frac, 1)}` : ''}, ${c.fat_flows} fat flow(s) (${c.reason})` }))));
  }
  kids.push(el('h3', { text: 'Moves' }));
  if (!res.moves.length) kids.push(el('p', { class: 'muted', text: 'No flow needs to move.' }));
  else kids.push(el('ul', { id: 'rb-moves' }, ...res.moves.map((m) => el('li', { 'data-move': m.flow,
    text: `${m.src} → ${m.dst} (${m.class}, ${bps(m.bps)}): ${m.from.join('>')} ⇒ ${m.to.join('>')}` }))));
  const sw = changes(res.plan, current);
  kids.push(el('h3', { text: current ? 'Per-switch changes (+ add, − remove)' : 'Per-switch rules and routes in the plan' }));
  if (!sw.length) kids.push(el('p', { class: 'muted', text: 'No rule or route changes.' }));
  for (const s of sw) {
    const add = s.items.filter(([k]) => k === '+').length, del = s.items.filter(([k]) => k === '−').length;
    kids.push(el('div', { 'data-switch': s.node },
      el('strong', { text: current ? `${s.node}: ${add} to add, ${del} to remove` : `${s.node}: ${s.items.length} entries` }),
      el('ul', { class: 'changes' }, ...s.items.map(([k, t]) => el('li', { 'data-op': k || null, text: `${k ? `${k} ` : ''}${t}` })))));
  }
  if (dry && (res.moved || sw.length)) kids.push(el('p', { text: 'Apply this plan? The controller recomputes it from the latest reports when you apply.' }));
  box.replaceChildren(...kids);
  box.hidden = false;
}
