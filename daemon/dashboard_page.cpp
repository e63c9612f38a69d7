// The dashboard's page, style and script, served from the binary (daemon/dashboard.hpp). Plain
// HTML that works with the keyboard and at 200 % zoom, light and dark; the script builds the
// DOM from the status events without innerHTML, so nothing a server says can become markup.
#include "daemon/dashboard.hpp"

namespace mcpmux {

const std::string_view dashboard_html = R"page(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="dashboard-key" content="{{KEY}}">
<link rel="icon" href="data:,">
<title>mcpmux</title>
<link rel="stylesheet" href="/dashboard.css">
<script src="/dashboard.js" defer></script>
</head>
<body>
<header>
  <h1>mcpmux</h1>
  <p id="summary" aria-live="polite">Connecting to the daemon…</p>
  <button id="reload" type="button">Reload config</button>
</header>
<p id="message" role="status" aria-live="polite"></p>
<main>
  <section aria-labelledby="servers-h">
    <h2 id="servers-h">Servers</h2>
    <div class="scroll"><table id="servers">
      <thead><tr><th scope="col">Server</th><th scope="col">State</th><th scope="col">Actions</th>
        <th scope="col">Era</th><th scope="col">PID</th><th scope="col">Up</th>
        <th scope="col">Restarts</th><th scope="col">Tools</th><th scope="col">Calls</th>
        <th scope="col">p50 / p99</th><th scope="col">Last hour</th><th scope="col" class="auth">Login</th></tr></thead>
      <tbody></tbody>
    </table></div>
  </section>
  <section id="held-section" hidden aria-labelledby="held-h">
    <h2 id="held-h">Held back by trust: <span id="held-server"></span></h2>
    <div id="held"></div>
  </section>
  <section id="tools-section" hidden aria-labelledby="tools-h">
    <h2 id="tools-h">Tools of <span id="tools-server"></span></h2>
    <div class="scroll"><table id="tools">
      <thead><tr><th scope="col">Tool</th><th scope="col">State</th><th scope="col">Shown as</th>
        <th scope="col">Description</th></tr></thead>
      <tbody></tbody>
    </table></div>
  </section>
  <section id="log-section" hidden aria-labelledby="log-h">
    <h2 id="log-h">Log of <span id="log-server"></span> <span id="log-state"></span></h2>
    <button id="log-stop" type="button">Stop following</button>
    <pre id="log" tabindex="0"></pre>
  </section>
  <section aria-labelledby="clients-h">
    <h2 id="clients-h">Clients</h2>
    <div class="scroll"><table id="clients">
      <thead><tr><th scope="col">Id</th><th scope="col">Transport</th><th scope="col">Era</th>
        <th scope="col">Profile</th><th scope="col">Client</th><th scope="col">Program</th></tr></thead>
      <tbody></tbody>
    </table></div>
  </section>
</main>
</body>
</html>
)page";

const std::string_view dashboard_css =
    R"css(:root { color-scheme: light dark; --bg: #fff; --fg: #1b1b1f; --muted: #5c5c66;
  --line: #d8d8de; --up: #1a7f37; --down: #c62828; --wait: #9a6700; --off: #6e7781; --focus: #0a58ca; }
@media (prefers-color-scheme: dark) { :root { --bg: #16161a; --fg: #e8e8ee; --muted: #a0a0ab;
  --line: #34343c; --up: #4ac26b; --down: #ff6b6b; --wait: #e3b341; --off: #8b949e; --focus: #6ea8fe; } }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 90rem; padding: 1rem; background: var(--bg); color: var(--fg);
  font: 1rem/1.45 system-ui, sans-serif; }
header { display: flex; flex-wrap: wrap; gap: .5rem 1.5rem; align-items: baseline; }
h1 { font-size: 1.5rem; margin: 0; } h2 { font-size: 1.15rem; margin: 1.5rem 0 .5rem; }
#summary, #message { color: var(--muted); margin: .25rem 0; }
.scroll { overflow-x: auto; container-type: inline-size; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.state { font-weight: 600; white-space: nowrap; }
.state::before { content: "●"; margin-right: .3rem; }
.up { color: var(--up); } .down { color: var(--down); } .wait { color: var(--wait); } .off { color: var(--off); }
tr.has-why > * { border-bottom: none; } tr.why > td { padding-top: 0; }
.reason { position: sticky; left: .6rem; max-width: calc(100cqi - 1.2rem); overflow-wrap: anywhere; }
.reason p { margin: 0 0 .25rem; } .reason pre { max-height: 8rem; }
.actions { white-space: nowrap; }
.spark .base { stroke: var(--line); } .spark .calls { fill: var(--muted); } .spark .lat { fill: none; stroke: var(--focus); stroke-width: 1.5; }
details { margin-top: .25rem; } pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0;
  padding: .5rem; border: 1px solid var(--line); max-height: 24rem; overflow: auto; }
button { white-space: nowrap; font: inherit; padding: .2rem .7rem; margin: 0 .3rem .3rem 0; border: 1px solid var(--line);
  border-radius: .3rem; background: transparent; color: inherit; cursor: pointer; }
button:focus-visible, pre:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
table.no-auth .auth { display: none; } td.auth { min-width: 10rem; } .past { color: var(--muted); }
#tools tr[data-state="hidden"] { color: var(--muted); }
del { color: var(--down); } ins { color: var(--up); text-decoration: none; font-weight: 600; }
)css";

const std::string_view dashboard_js = R"js('use strict';
const $ = (id) => document.getElementById(id);

// The session's key comes once, in the page the login link opens; this tab keeps it in its
// sessionStorage (this origin's, port included) and sends it with every request. The cookie
// alone, which every port of this host receives, gets neither state nor actions.
const key = (() => {
  const given = document.querySelector('meta[name="dashboard-key"]').content;
  if (given) {
    sessionStorage.setItem('mcpmux-dashboard-key', given);
    history.replaceState(null, '', '/');  // the login link is spent; a reload is of the page
  }
  return sessionStorage.getItem('mcpmux-dashboard-key') ?? '';
})();
const noSession = 'This tab has no dashboard session (each login belongs to the tab it was opened in): ' +
  'run `mcpmux dashboard` for a new login link.';

// An element with text children only: nothing a server says can become markup.
function el(tag, props = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'on') for (const [ev, f] of Object.entries(v)) e.addEventListener(ev, f);
    else if (k === 'class') e.className = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}

function say(text) { $('message').textContent = text; }

// A server-sent event stream, read with fetch (EventSource cannot send the key): on(event, data)
// for each event until the stream ends or `signal` aborts it; resolves with the HTTP status.
async function stream(url, on, signal) {
  const r = await fetch(url, { headers: { 'x-dashboard-key': key }, signal });
  if (!r.ok) return r.status;
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return r.status;
    text += value;
    for (let end; (end = text.indexOf('\n\n')) >= 0; text = text.slice(end + 2)) {
      let event = 'message';
      const data = [];
      for (const line of text.slice(0, end).split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length) on(event, data.join('\n'));
    }
  }
}

async function act(method, params = {}) {
  const r = await fetch('/dashboard/action', {
    method: 'POST', credentials: 'same-origin',
    headers: { 'content-type': 'application/json', 'x-dashboard-key': key },
    body: JSON.stringify({ method, params }),
  });
  const answer = await r.json().catch(() => ({ error: `HTTP ${r.status}` }));
  if (answer.error) {
    const e = new Error(answer.error.message ?? answer.error);
    e.data = answer.error.data;
    throw e;
  }
  return answer.result;
}

const stateClass = (s) => s === 'ready' ? 'up' : s === 'disabled' || s === 'stopped' ? 'off'
  : s === 'needs_login' ? 'wait' : 'down';
const ms = (v) => v === null || v === undefined ? '–' : v < 1000 ? `${v} ms` : v < 60000
  ? `${(v / 1000).toFixed(1)} s` : v < 3600000 ? `${Math.floor(v / 60000)} min` : `${(v / 3600000).toFixed(1)} h`;
const us = (v) => v === null || v === undefined ? '–' : v < 1000 ? `${v} µs` : `${(v / 1000).toFixed(1)} ms`;

// The last hour as inline SVG: calls per minute (bars) and p50 latency (line), each scaled to its
// own highest value; the numbers are in its label.
const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}
function sparkline(h) {
  if (!h || !h.calls.length) return '–';
  const n = 60, w = 120, ht = 24, step = w / n;
  const calls = h.calls, lat = h.p50_us.map((v) => Math.max(v, 0));
  const maxCalls = Math.max(1, ...calls), maxLat = Math.max(1, ...lat);
  const total = calls.reduce((a, b) => a + b, 0);
  const label = `last ${calls.length} min: ${total} calls, at most ${Math.max(...calls)} a minute` +
    (Math.max(...lat) > 0 ? `; p50 up to ${us(Math.max(...lat))}` : '');
  const s = svg('svg', { class: 'spark', viewBox: `0 0 ${w} ${ht}`, width: w, height: ht, role: 'img', 'aria-label': label });
  s.append(svg('title', {}));
  s.firstChild.textContent = label;
  s.append(svg('line', { x1: 0, y1: ht - 0.5, x2: w, y2: ht - 0.5, class: 'base' }));
  const x0 = (n - calls.length) * step;
  calls.forEach((v, i) => {
    if (!v) return;
    const bh = Math.max(1, (v / maxCalls) * (ht - 2));
    s.append(svg('rect', { x: x0 + i * step, y: ht - bh, width: Math.max(1, step - 0.5), height: bh, class: 'calls' }));
  });
  const pts = lat.map((v, i) => v > 0 ? `${x0 + i * step + step / 2},${ht - 1 - (v / maxLat) * (ht - 4)}` : null).filter(Boolean);
  if (pts.length > 1) s.append(svg('polyline', { points: pts.join(' '), class: 'lat' }));
  return s;
}

const rows = new Map(); // server name → its row's cells, kept so that focus stays on its buttons

function serverRow(s) {
  const cells = {};
  const td = (key, cls) => (cells[key] = el('td', cls ? { class: cls } : {}));
  const row = el('tr', {}, el('th', { scope: 'row' }, s.name), td('state'), td('actions', 'actions'),
    td('era'), td('pid', 'num'), td('up', 'num'), td('restarts', 'num'), td('tools', 'num'),
    td('calls', 'num'), td('lat', 'num'), td('spark'), td('auth', 'auth'));
  // Why it is down (or what it last came back from): a row of its own under the server's, its
  // text held inside the table's visible box, so that no width of the window cuts it off.
  cells.reason = el('div', { class: 'reason' });
  cells.why = el('tr', { class: 'why' }, el('td', { colspan: $('servers').tHead.rows[0].cells.length }, cells.reason));
  const button = (label, text, click) => el('button', { type: 'button', 'aria-label': label, on: { click } }, text);
  cells.approve = button(`Review what ${s.name} holds back`, 'Review', () => showHeld(s.name));
  cells.actions.append(button(`Restart ${s.name}`, 'Restart', () => restart(s.name)),
    button(`Log of ${s.name}`, 'Log', () => showLog(s.name)),
    button(`Tools of ${s.name}`, 'Tools', () => showTools(s.name)), cells.approve);
  cells.authState = el('span');
  cells.login = button(`Log in to ${s.name}`, 'Log in', () => login(s.name));
  cells.logout = button(`Log out of ${s.name}`, 'Log out', () => logout(s.name));
  cells.loginLink = el('a', { target: '_blank', rel: 'noopener' }, 'login page');
  cells.auth.append(cells.authState, ' ', cells.loginLink, el('br'), cells.login, cells.logout);
  row.dataset.server = s.name;
  cells.row = row;
  return cells;
}

let lastStatus = null;
function render(st) {
  lastStatus = st;
  const ready = st.servers.filter((s) => s.state === 'ready').length;
  $('summary').textContent = `${ready} of ${st.servers.length} servers ready · ${st.tools} tools · ` +
    `${st.sessions.filter((c) => c.era !== 'unknown').length} clients · pid ${st.pid} · up ${ms(st.uptime_ms)}`;
  const body = $('servers').tBodies[0];
  const seen = new Set();
  for (const [i, s] of st.servers.entries()) {
    seen.add(s.name);
    let c = rows.get(s.name);
    if (!c) rows.set(s.name, (c = serverRow(s)));
    // In status order, moved only when out of place: a row taken out of the page, even to be
    // put back, loses the keyboard focus of its buttons.
    if (body.rows[2 * i] !== c.row) body.insertBefore(c.row, body.rows[2 * i] ?? null);
    if (body.rows[2 * i + 1] !== c.why) body.insertBefore(c.why, body.rows[2 * i + 1] ?? null);
    c.row.dataset.state = s.state;
    c.state.className = `state ${stateClass(s.state)}`;
    c.state.textContent = s.crash_looping ? `${s.state} (crash loop)` : s.state;
    c.era.textContent = s.era ?? '–';
    c.pid.textContent = s.pid ?? '–';
    c.up.textContent = ms(s.uptime_ms);
    c.restarts.textContent = s.restarts;
    c.tools.textContent = s.quarantined ? `${s.tools} (${s.quarantined} held)` : s.tools;
    c.calls.textContent = `${s.calls}${s.errors ? ` (${s.errors} failed)` : ''}`;
    c.lat.textContent = `${us(s.latency_p50_us)} / ${us(s.latency_p99_us)}`;
    c.spark.replaceChildren(sparkline(st.history?.[s.name]));
    renderWhy(c, s);
    c.approve.hidden = !s.quarantined;
    renderAuth(c, s.auth);
    if (toolsShown?.server === s.name) toolsShown.refresh(toolsSignature(s));
  }
  $('servers').classList.toggle('no-auth', !st.servers.some((s) => s.auth));
  for (const [name, c] of rows) if (!seen.has(name)) { c.row.remove(); c.why.remove(); rows.delete(name); }
  const clients = $('clients').tBodies[0];
  clients.replaceChildren(...st.sessions.filter((c) => c.era !== 'unknown').map((c) => el('tr', {},
    el('td', { class: 'num' }, c.id), el('td', {}, c.transport + (c.token ? ` (token ${c.token})` : '')), el('td', {}, c.era),
    el('td', {}, c.profile ?? 'everything'), el('td', {}, c.client ?? '–'),
    el('td', {}, c.agent_program ?? c.program ?? '–'))));
}

// The last error and stderr lines: open while the server is down, folded (and muted) once it
// has come back from them.
function renderWhy(c, s) {
  const tail = s.stderr_tail ?? [];
  c.why.hidden = !s.last_error && !tail.length;
  c.row.classList.toggle('has-why', !c.why.hidden);
  const past = s.state === 'ready';
  c.reason.classList.toggle('past', past);
  const pre = tail.length ? el('pre', {}, tail.join('\n')) : null;
  const wasOpen = c.reason.querySelector('details')?.open ?? false;
  c.reason.replaceChildren(s.last_error ? el('p', {}, `Last error: ${s.last_error}` +
      (s.last_error_at_ms ? ` (${ms(Date.now() - s.last_error_at_ms)} ago)` : '')) : '',
    pre && past ? el('details', wasOpen ? { open: '' } : {}, el('summary', {}, 'stderr'), pre) : pre ?? '');
}

// OAuth: the login's state, and the button for what can be done about it.
const authText = { logged_in: 'logged in', needs_login: 'needs login', login_in_progress: 'login in progress', needs_step_up: 'needs more scope' };
function renderAuth(c, a) {
  c.authState.textContent = !a ? '' : (authText[a.state] ?? a.state) +
    (a.state === 'logged_in' && a.expires_at ? (a.expires_at * 1000 > Date.now()
      ? ` (token for ${ms(a.expires_at * 1000 - Date.now())})` : ' (token expired; refreshing)') : '') +
    (a.last_error ? `: ${a.last_error}` : '');
  c.login.hidden = !a || a.method !== 'authorization_code' || a.state === 'logged_in' || a.state === 'login_in_progress';
  c.logout.hidden = !a || !a.logged_in;
  // (The daemon takes only HTTPS or loopback endpoints; the page follows nothing else either.)
  c.loginLink.hidden = !(a?.login?.running && /^https?:\/\//i.test(a.login.url ?? ''));
  if (c.loginLink.hidden) return;
  c.loginLink.href = a.login.url;
  if (pendingLogin?.server === c.row.dataset.server) {
    if (pendingLogin.tab && !pendingLogin.tab.closed) pendingLogin.tab.location.href = a.login.url;
    pendingLogin = null;
  }
}

async function restart(server) {
  try { await act('mcpmux/restart', { server }); say(`${server}: restarting`); } catch (e) { say(`${server}: ${e.message}`); }
}

// A server's log, followed live: its last lines, then each new one as it comes.
let logStream = null; // the AbortController of the log followed
function stopLog(state = 'stopped') {
  logStream?.abort();
  logStream = null;
  $('log-state').textContent = `(${state})`;
  $('log-stop').hidden = true;
}
function showLog(server) {
  stopLog();
  const log = $('log');
  log.replaceChildren();
  $('log-server').textContent = server;
  $('log-state').textContent = '(following)';
  $('log-stop').hidden = false;
  $('log-section').hidden = false;
  const following = (logStream = new AbortController());
  stream(`/dashboard/log?server=${encodeURIComponent(server)}`, (event, data) => {
    if (event !== 'line') return;
    const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    log.append(`${JSON.parse(data)}\n`);
    while (log.childNodes.length > 2000) log.firstChild.remove();
    if (atEnd) log.scrollTop = log.scrollHeight;
  }, following.signal).catch(() => {}).then(() => { if (logStream === following) stopLog('ended'); });
  log.focus();
}
$('log-stop').addEventListener('click', () => stopLog());

// Every tool of a server and what became of it; fetched again when its counts or state change.
let toolsShown = null;
const toolsSignature = (s) => `${s?.state} ${s?.tools} ${s?.quarantined}`;
async function showTools(server) {
  let seen = toolsSignature(lastStatus?.servers.find((s) => s.name === server));
  const load = async () => {
    try {
      const r = await act('mcpmux/tools', { server, hidden: true });
      $('tools-server').textContent = server;
      $('tools').tBodies[0].replaceChildren(...r.tools.map((t) => {
        let state = t.state + (t.why ? ` (${t.why}${t.was ? ` from ${t.was}` : ''})` : '');
        if (t.changed) state += `; ${t.changed.why} at ${new Date(t.changed.time_ms).toLocaleTimeString()} (${t.changed.shown_by})`;
        const row = el('tr', {}, el('th', { scope: 'row' }, t.original), el('td', {}, state),
          el('td', {}, t.name ?? '–'), el('td', {}, t.description));
        row.dataset.state = t.state;
        return row;
      }));
      $('tools-section').hidden = false;
    } catch (e) { say(`${server}: ${e.message}`); }
  };
  toolsShown = { server, refresh: (sig) => { if (sig !== seen) load(); seen = sig; } };
  await load();
  $('tools-section').scrollIntoView({ block: 'nearest' });
}

// A login opens a tab at once (while the click still counts as the person's), cut off from
// this page, and sends it to the authorization server's page when the daemon has its address.
let pendingLogin = null;
async function login(server) {
  const tab = window.open('about:blank', '_blank');
  if (tab) tab.opener = null;
  try {
    await act('mcpmux/auth/login', { server });
    pendingLogin = { server, tab };
    say(`${server}: login started`);
  } catch (e) { tab?.close(); say(`${server}: ${e.message}`); }
}

async function logout(server) {
  try { await act('mcpmux/auth/logout', { server }); say(`${server}: logged out`); } catch (e) { say(`${server}: ${e.message}`); }
}

async function showHeld(server) {
  try {
    const r = await act('mcpmux/quarantine', { server, diff: true });
    const items = r.servers[0]?.items ?? [];
    const expected = Object.fromEntries(items.map((i) => [i.name, i.offered]));
    $('held-server').textContent = server;
    $('held').replaceChildren(...items.map((i) => el('div', {},
      el('h3', {}, `${i.kind} ${i.name}: ${i.why}${i.was ? ` (from ${i.was})` : ''}`),
      ...(i.diff ?? []).map((f) => el('p', {}, el('code', {}, f.field), ': ',
        ...f.runs.map((run) => run.op === '=' ? run.text : el(run.op === '-' ? 'del' : 'ins', {}, run.text)))))),
    el('button', { type: 'button', on: { click: async () => {
      try {
        const a = await act('mcpmux/trust', { server, all: true, expected });
        say(`${server}: approved ${a.approved.join(', ') || 'nothing'}${a.skipped.length ? `; changed again: ${a.skipped.join(', ')}` : ''}`);
        $('held-section').hidden = true;
      } catch (e) { say(`${server}: ${e.message}`); }
    } } }, `Approve all of ${server}`));
    $('held-section').hidden = false;
  } catch (e) { say(`${server}: ${e.message}`); }
}

$('reload').addEventListener('click', async () => {
  try {
    const r = await act('mcpmux/reload');
    say(`Reloaded: ${r.added.length} added, ${r.removed.length} removed, ${r.changed.length} changed`);
  } catch (e) {
    say(`The config was not loaded: ${(e.data?.errors ?? [e.message]).join('; ')}`);
  }
});

// The status as it changes, for as long as the page is open; again after a pause when the
// daemon is gone, never without the session.
async function followStatus() {
  while (key) {
    const status = await stream('/dashboard/events', (event, data) => {
      if (event === 'status') render(JSON.parse(data));
    }).catch(() => 0);
    if (status === 401 || status === 403) break;
    $('summary').textContent = 'The daemon is not answering; trying again…';
    await new Promise((wake) => setTimeout(wake, 2000));
  }
  $('summary').textContent = noSession;
}
followStatus();
)js";

}  // namespace mcpmux
