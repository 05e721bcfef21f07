// Header chips (GET /api/v1/status), the classes table (GET /api/v1/classes)
// and the events table (GET /api/v1/events, newest last in the API, newest
// first here).

import { bps, pct, ago, clock, el } from './fmt.js';

function chip(id, text, state, title) {
  const c = document.getElementById(id);
  c.textContent = text;
  c.dataset.state = state;
  c.title = title || '';
}

export function renderHeader(st) {
  document.getElementById('fabric-name').textContent =
    `${st.topology.name} · ${st.topology.nodes} nodes · ${st.topology.links} links · v${st.version}`;
  const p = st.probes;
  const staleNames = p.list.filter((x) => x.stale).map((x) => x.node);
  chip('hdr-probes', `Probes: ${p.alive} alive · ${p.stale} stale`,
    p.total === 0 ? 'warn' : p.stale > 0 ? 'bad' : 'ok',
    p.list.map((x) => `${x.node}: last report ${Math.round(x.age_s)} s ago${x.stale ? ' (stale)' : ''}`).join('\n') || 'no probe has reported yet');
  if (staleNames.length) document.getElementById('hdr-probes').textContent += ` (${staleNames.slice(0, 4).join(', ')}${staleNames.length > 4 ? ', …' : ''})`;
  const b = st.backend;
  chip('hdr-backend', `Backend: ${b.name} ${b.healthy ? 'healthy' : `failing${b.error ? `: ${b.error}` : ''}`}`, b.healthy ? 'ok' : 'bad', b.error || '');
  if (b.bgp) { // backend bgp (docs/bgp.md): the speaker's sessions and what it announces
    const s = b.bgp.sessions, up = s.filter((x) => x.state === 'established').length;
    const c = document.getElementById('hdr-backend');
    c.textContent += ` · BGP ${b.bgp.speaker.running ? `${up}/${s.length} sessions · ${b.bgp.announced.length} routes` : 'speaker down'}`;
    if (b.healthy && (up < s.length || !b.bgp.speaker.running)) c.dataset.state = 'warn';
    c.title = [b.error || '', ...s.map((x) => `${x.node} (${x.peer}, AS ${x.asn}): ${x.state}`),
      ...b.bgp.announced.map((a) => `${a.node}: ${a.prefix} via ${a.via} (${a.next_hop})`)].filter(Boolean).join('\n');
  }
  // Active/standby (docs/ha.md): shown only when HA is on; a standby acts
  // on nothing, which the operator must see at a glance.
  const ha = st.ha;
  const hc = document.getElementById('hdr-ha');
  hc.hidden = !(ha && ha.enabled);
  if (ha && ha.enabled) {
    chip('hdr-ha', ha.role === 'leader' ? `Role: leader · term ${ha.term}`
      : `Role: standby · leader ${ha.leader || 'unknown'}`, ha.role === 'leader' ? 'ok' : 'warn',
    `election ${ha.election}, term ${ha.term}, ${ha.elections} won here; leader ${ha.leader || 'unknown'}`);
  }
  const r = st.last_rebalance;
  if (!r) chip('hdr-rebalance', 'Last round: never', 'unknown');
  else if (!r.dry_run && r.error) {
    // A round that could not act must not read as a result: no arrow.
    chip('hdr-rebalance', `Last round: ${ago(r.ts, st.now)} · not applied: ${r.error}`, 'bad',
      `at ${clock(r.ts)}; installed routes kept`);
  } else {
    const note = r.dry_run ? ' (dry run)' : r.applied ? '' : ` (nothing programmed: backend ${b.name})`;
    chip('hdr-rebalance',
      `Last round: ${ago(r.ts, st.now)} · ${r.moved} moved · max ~${pct(r.max_util_before)} → ~${pct(r.max_util_after)}${note}`,
      'unknown', `at ${clock(r.ts)}, ${r.congested} congested direction(s), took ${(r.duration_s * 1000).toFixed(1)} ms; max utilisation before → after is the round's estimate from the flows' demand`);
  }
  // Warm-up (docs/policy.md): the first look after the probes were silent
  // may miss some of them, so the loop makes no choice move on it.
  if (st.rebalance && st.rebalance.warming_up) {
    const c = document.getElementById('hdr-rebalance');
    c.textContent += ' · warming up';
    c.dataset.state = 'warn';
    c.title += '\nwarming up: no automatic choice move until an interval after the first probe report (thresholds.warmup)';
  }
}

// The last thing tierflow changed (GET /api/v1/history's last_action: a
// rebalance that moved flows, pins withdrawn or removed, routes adopted),
// however many rounds found nothing to do since.
export function renderAction(a, now) {
  if (!a) { chip('hdr-action', 'Last action: none yet', 'unknown', 'no round has moved a flow or removed a pin since the start'); return; }
  // A round's figures are its estimate from the flows' demand: "~".
  const what = a.kind === 'rebalance'
    ? `moved ${a.moved} flow${a.moved === 1 ? '' : 's'} (max ~${pct(a.max_util_before)} → ~${pct(a.max_util_after)})`
    : a.message;
  chip('hdr-action', `Last action: ${what} · ${ago(a.ts, now)}`, 'unknown', `${a.kind} at ${clock(a.ts)}: ${a.message}`);
  document.getElementById('hdr-action').dataset.kind = a.kind;
}

export function renderClasses(resp) {
  const tb = document.querySelector('#classes-table tbody');
  const cls = (resp && resp.classes) || [];
  if (!cls.length) { tb.replaceChildren(el('tr', {}, el('td', { class: 'empty', colspan: 4, text: 'No classes.' }))); return; }
  tb.replaceChildren(...cls.map((c) => el('tr', { 'data-class': c.name },
    el('td', { text: c.name }),
    el('td', { text: c.tier || 'any', title: c.tier ? `traffic of ${c.name} crosses the ${c.tier} tier` : 'no tier computed yet' }),
    el('td', { class: 'num', text: `${c.flows}${c.fat_flows ? ` (${c.fat_flows} fat)` : ''}` }),
    el('td', { class: 'num', text: bps(c.bps) }),
  )));
}

const REBALANCE_KINDS = new Set(['rebalance', 'dry_run']);

export function renderEvents(resp) {
  const tb = document.querySelector('#events-table tbody');
  const evs = ((resp && resp.events) || []).slice().reverse();
  if (!evs.length) { tb.replaceChildren(el('tr', {}, el('td', { class: 'empty', colspan: 5, text: 'No events yet.' }))); return; }
  tb.replaceChildren(...evs.map((e) => {
    const rb = REBALANCE_KINDS.has(e.kind);
    return el('tr', { 'data-event': e.id, 'data-kind': e.kind },
      el('td', { text: clock(e.ts) }),
      el('td', { text: e.kind.replace('_', ' ') }),
      el('td', { class: 'num est', text: rb ? `~${pct(e.max_util_before)} → ~${pct(e.max_util_after)}` : '',
        title: rb ? "the round's estimate from the flows' demand" : null }),
      el('td', { class: 'num', text: rb ? String(e.moved) : '' }),
      el('td', { text: e.message }),
    );
  }));
}
