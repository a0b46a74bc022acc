// Meshrelay management UI. Polls the JSON API (/api/v1) and shows what an
// operator needs in an incident: safe mode, held outputs, each cluster's
// connection, warm state and snapshots, and each Gloo resource's approval. No framework, no build step, no
// network access beyond this server. The DOM is built with text nodes only
// (never innerHTML), and a section is rebuilt only when its data changed, so
// a command being selected for copying survives the next poll.
//
// Every API call needs the server's admin token. The page asks for it once,
// keeps it in this tab's session storage (never a cookie, so no other site can
// make the browser send it) and asks again when the server refuses it.

import { badge, h, nodes, short } from './dom.js';
import { topologyContent } from './topology.js';

const DEFAULT_POLL_MS = 1000;
const MIN_POLL_MS = 100;

const pollMs = readPollInterval(new URLSearchParams(location.search).get('poll'));
const fetchTimeoutMs = Math.max(3 * pollMs, 3000);

const state = {
  /** The last complete answer from the server: { status, safeMode, clusters, held, resources, topology }. */
  data: null,
  lastOkAt: null,
  failingSince: null,
  error: null,
  /** Input/output snapshots of the cluster shown in the snapshot view. */
  snapshots: { cluster: null, key: null, input: null, output: null, loading: false },
  /** Which <details> the operator opened, by key, so re-rendering keeps them open. */
  openDetails: new Set(),
};
const signatures = new WeakMap();

const TOKEN_KEY = 'meshrelay.adminToken';
const auth = { token: sessionStorage.getItem(TOKEN_KEY) };
/** Bumped on every (re)start of polling, so a poll still in flight from before is dropped. */
let pollGeneration = 0;
let pollTimer = null;

function readPollInterval(raw) {
  const ms = Number(raw);
  return raw !== null && Number.isFinite(ms) && ms >= MIN_POLL_MS ? ms : DEFAULT_POLL_MS;
}

// ---- DOM and formatting helpers -------------------------------------------

const $ = (id) => document.getElementById(id);
const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function formatAbsolute(iso) {
  return `${new Date(iso).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

function formatDuration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

function formatRelative(iso) {
  const ms = Date.now() - Date.parse(iso);
  return ms >= 0 ? `${formatDuration(ms)} ago` : `in ${formatDuration(-ms)}`;
}

function formatCountdown(iso) {
  const s = Math.max(0, Math.ceil((Date.parse(iso) - Date.now()) / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

// Text that the clock tick rewrites every second is hidden from assistive
// technology: inside a role="alert" banner every change would re-announce the
// whole banner. The absolute time is always there for a screen reader.

/**
 * A relative time ("5 s ago") kept current by the clock tick; the absolute time is in its title and for screen readers.
 */
function ago(iso) {
  return [
    h(
      'time',
      { datetime: iso, title: formatAbsolute(iso), 'data-rel': iso, 'aria-hidden': 'true' },
      formatRelative(iso),
    ),
    h('span', { class: 'visually-hidden' }, formatAbsolute(iso)),
  ];
}

/** Absolute and relative time, for banners: "2026-11-22 07:01:30 UTC (5 s ago)". */
function when(iso) {
  return [
    h('time', { datetime: iso }, formatAbsolute(iso)),
    ' ',
    h('span', { class: 'abs', 'aria-hidden': 'true' }, '(', h('span', { 'data-rel': iso }, formatRelative(iso)), ')'),
  ];
}

/** Why a fetch failed, in an operator's words. */
function describeFailure(err) {
  if (err instanceof DOMException && (err.name === 'TimeoutError' || err.name === 'AbortError'))
    return `no answer within ${fetchTimeoutMs} ms`;
  if (err instanceof TypeError) return 'the connection failed';
  return err instanceof Error ? err.message : String(err);
}

function command(text) {
  return h('code', { class: 'command' }, text);
}

/**
 * Replaces an element's content only when its data changed; returns whether it
 * did. Keyboard focus on an element with an id survives the rebuild.
 */
function update(el, data, build) {
  const signature = JSON.stringify(data);
  if (signatures.get(el) === signature) return false;
  // Text an operator is selecting (a command to copy) stays: the new content waits until the selection ends.
  const selection = getSelection();
  if (selection && !selection.isCollapsed && el.contains(selection.anchorNode)) return false;
  signatures.set(el, signature);
  const focused = el.contains(document.activeElement) ? document.activeElement.id : '';
  el.replaceChildren(...nodes(build()));
  if (focused) document.getElementById(focused)?.focus();
  return true;
}

function tickClocks() {
  for (const el of document.querySelectorAll('[data-rel]')) el.textContent = formatRelative(el.dataset.rel);
  for (const el of document.querySelectorAll('[data-countdown]'))
    el.textContent = formatCountdown(el.dataset.countdown);
  renderPollState();
}

// ---- polling ---------------------------------------------------------------

async function getJson(path) {
  const res = await fetch(path, {
    cache: 'no-store',
    headers: { authorization: `Bearer ${auth.token}` },
    signal: AbortSignal.timeout(fetchTimeoutMs),
  });
  if (!res.ok) {
    const body = await res.json().catch(() => ({}));
    const error = new Error(`${path}: HTTP ${res.status}${body.message ? ` ${body.message}` : ''}`);
    error.status = res.status;
    throw error;
  }
  return res.json();
}

async function poll(generation) {
  if (generation !== pollGeneration) return;
  try {
    const answers = await Promise.all(
      [
        '/api/v1/status',
        '/api/v1/safe-mode',
        '/api/v1/clusters',
        '/api/v1/outputs/held',
        '/api/v1/resources',
        '/api/v1/topology',
      ].map(getJson),
    );
    if (generation !== pollGeneration) return;
    const [status, safeMode, clusters, held, resources, topology] = answers;
    state.data = {
      status,
      safeMode,
      clusters: clusters.clusters,
      held: held.held,
      resources: resources.resources,
      topology,
    };
    state.lastOkAt = new Date().toISOString();
    state.failingSince = null;
    state.error = null;
  } catch (err) {
    if (generation !== pollGeneration) return;
    if (err.status === 401)
      return signOut(
        'The server refused this token: it is wrong, or the server was given a new one. Enter the current one.',
      );
    state.failingSince ??= new Date().toISOString();
    state.error = describeFailure(err);
  }
  render();
  pollTimer = setTimeout(() => poll(generation), pollMs);
}

function startPolling() {
  clearTimeout(pollTimer);
  pollGeneration += 1;
  void poll(pollGeneration);
}

// ---- sign-in ---------------------------------------------------------------

function showSignedIn(signedIn) {
  $('sign-in').hidden = signedIn;
  $('data').hidden = !signedIn;
  $('sign-out').hidden = !signedIn;
  renderPollState();
}

function signIn(ev) {
  ev.preventDefault();
  const input = $('admin-token');
  const token = input.value.trim();
  if (token === '') return;
  auth.token = token;
  sessionStorage.setItem(TOKEN_KEY, token);
  input.value = '';
  showSignedIn(true);
  startPolling();
}

/** Forgets the token and what it showed, stops polling and asks for a token again. */
function signOut(message) {
  auth.token = null;
  sessionStorage.removeItem(TOKEN_KEY);
  clearTimeout(pollTimer);
  pollGeneration += 1;
  Object.assign(state, { data: null, lastOkAt: null, failingSince: null, error: null });
  state.snapshots = { cluster: null, key: null, input: null, output: null, loading: false };
  $('sign-in-message').textContent = message;
  showSignedIn(false);
  $('admin-token').focus();
}

// ---- rendering -------------------------------------------------------------

function render() {
  renderUnreachable();
  document.body.classList.toggle('is-stale', state.failingSince !== null);
  if (state.data) {
    const { status, safeMode, clusters, held } = state.data;
    renderHeader(status);
    renderSafeMode(safeMode, clusters);
    renderHeld(held);
    renderStaleContributions(safeMode.staleContributions ?? []);
    renderWorkspaces(status.workspaces);
    renderClusters(clusters, safeMode, held);
    update($('topology'), state.data.topology, () => topologyContent(state.data.topology));
    renderResources(state.data.resources);
    renderSnapshotView();
    document.title = `${safeMode.active ? 'SAFE MODE · ' : ''}${held.length > 0 ? 'HELD OUTPUT · ' : ''}Meshrelay management`;
  }
  renderPollState();
}

function renderPollState() {
  const el = $('poll-state');
  const last = state.lastOkAt ? formatRelative(state.lastOkAt) : null;
  if (auth.token === null) {
    el.textContent = 'signed out';
    el.className = 'state-bad';
    return;
  }
  const text = state.failingSince
    ? `server unreachable${last ? `; last answer ${last}` : ''}`
    : last
      ? `${last} (every ${pollMs} ms)`
      : 'connecting…';
  if (el.textContent !== text) el.textContent = text;
  el.className = state.failingSince ? 'state-bad' : 'state-ok';
}

function renderUnreachable() {
  const el = $('server-unreachable');
  el.hidden = state.failingSince === null;
  update(el, [state.failingSince, state.error, state.lastOkAt], () =>
    state.failingSince === null
      ? []
      : [
          h('h2', null, 'Server unreachable'),
          h(
            'p',
            null,
            'The management server has not answered since ',
            when(state.failingSince),
            `: ${state.error}. Retrying every ${pollMs} ms.`,
          ),
          h(
            'p',
            null,
            state.lastOkAt
              ? ['Below is the last state received, at ', when(state.lastOkAt), '.']
              : `Nothing has been received from ${location.origin} yet.`,
          ),
        ],
  );
}

function renderHeader(status) {
  update($('replica'), status.replica, () => status.replica);
  const store = status.store;
  update($('store-state'), store, () =>
    store.backend === 'memory'
      ? [badge('warn', 'memory only'), ' not shared with other replicas']
      : store.redisUp
        ? [badge('ok', 'Redis up'), store.pendingWriteBack > 0 ? ` writing back ${store.pendingWriteBack}` : null]
        : [
            badge('bad', 'Redis down'),
            ` ${plural(store.pendingWriteBack, 'change')} pending write-back; translating from memory`,
          ],
  );
  const gate = status.translation.gate;
  const problems = status.translation.problems?.length ?? 0;
  update($('translation-state'), [gate.state, status.translation.lastRunAt, problems], () => [
    gate.state === 'held' ? badge('bad', 'halted') : badge('ok', 'running'),
    status.translation.lastRunAt ? [' last run ', ago(status.translation.lastRunAt)] : null,
    problems > 0 ? [' ', badge('warn', plural(problems, 'problem'))] : null,
  ]);
}

function renderSafeMode(safeMode, clusters) {
  const el = $('safe-mode-banner');
  el.hidden = !safeMode.active;
  const byName = new Map(clusters.map((c) => [c.name, c]));
  const missing = safeMode.missing.map((name) => ({ name, connection: byName.get(name)?.connection ?? null }));
  update(el, safeMode.active ? [safeMode, missing] : null, () =>
    safeMode.active
      ? [
          h(
            'h2',
            { id: 'safe-mode-title' },
            safeMode.mode === 'safe-start-window'
              ? 'Safe-start window: translation is waiting for clusters'
              : 'Safe mode: translation is halted',
          ),
          h(
            'p',
            null,
            'No output snapshot is computed or pushed while the input of a warm cluster is missing; agents keep serving their last output.',
          ),
          safeMode.since ? h('p', null, 'Halted since ', when(safeMode.since), '.') : null,
          safeMode.windowEndsAt
            ? h(
                'p',
                { class: 'countdown' },
                'The window ends at ',
                h('time', { datetime: safeMode.windowEndsAt }, formatAbsolute(safeMode.windowEndsAt)),
                ' (in ',
                h(
                  'span',
                  { id: 'window-countdown', 'data-countdown': safeMode.windowEndsAt, 'aria-hidden': 'true' },
                  formatCountdown(safeMode.windowEndsAt),
                ),
                '); translation then runs without the missing clusters.',
              )
            : null,
          missing.length === 0
            ? h('p', null, 'Waiting for the first gate check.')
            : [
                h('h3', null, `Waiting for ${plural(missing.length, 'cluster')}:`),
                h('ul', { class: 'missing' }, missing.map(missingCluster)),
              ],
        ]
      : [],
  );
}

function missingCluster({ name, connection }) {
  const seen =
    connection === null
      ? 'not registered on this replica'
      : connection.connected
        ? 'agent connected, no snapshot yet'
        : connection.disconnectedSince
          ? ['agent disconnected ', ago(connection.disconnectedSince)]
          : 'agent not connected';
  return h(
    'li',
    { 'data-cluster': name },
    h('p', null, h('strong', { class: 'cluster-name' }, name), ' — ', seen),
    h('p', { class: 'ways-out-title' }, 'Ways out (each takes effect without a restart):'),
    h(
      'ol',
      { class: 'ways-out' },
      h('li', null, 'Reconnect the agent of ', h('strong', null, name), ': check its pods, logs and relay address.'),
      h('li', null, 'Gone for good? Deregister it: ', command(`meshctl cluster deregister ${name}`)),
      h('li', null, 'Carry on without it: ', command(`meshctl cluster update ${name} --skip-warming`)),
    ),
  );
}

const HELD_REASONS = { 'delete-share': 'deletes too large a share', 'missing-inputs': 'inputs missing' };

function renderHeld(held) {
  const el = $('held-outputs-banner');
  el.hidden = held.length === 0;
  update(el, held, () =>
    held.length === 0
      ? []
      : [
          h(
            'h2',
            { id: 'held-outputs-title' },
            `${held.length === 1 ? 'An output is' : `${held.length} outputs are`} held by the blast-radius guard`,
          ),
          h(
            'p',
            null,
            'A held output is not sent to its agent until an operator releases it or the inputs that explain it arrive.',
          ),
          h(
            'ul',
            { class: 'held' },
            held.map((entry) =>
              h(
                'li',
                { 'data-cluster': entry.cluster },
                h(
                  'p',
                  null,
                  h('strong', { class: 'cluster-name' }, entry.cluster),
                  ' ',
                  badge('warn', HELD_REASONS[entry.reason] ?? entry.reason),
                  ` ${entry.message}.`,
                ),
                h(
                  'p',
                  { class: 'muted' },
                  'Output ',
                  h('code', { title: entry.hash }, short(entry.hash)),
                  entry.missingClusters.length > 0
                    ? `, built without the inputs of ${entry.missingClusters.join(', ')},`
                    : '',
                  ' held since ',
                  when(entry.since),
                  '.',
                ),
                h('p', null, 'Release it: ', command(`meshctl output release ${entry.cluster}`)),
              ),
            ),
          ),
        ],
  );
}

// DESIGN §13: an absent cluster's last known contribution stays in every output, marked stale.
function renderStaleContributions(stale) {
  const el = $('stale-contributions-banner');
  el.hidden = stale.length === 0;
  update(el, stale, () =>
    stale.length === 0
      ? []
      : [
          h(
            'h2',
            { id: 'stale-contributions-title' },
            `Carrying the last known contribution of ${stale.length === 1 ? 'an absent cluster' : `${stale.length} absent clusters`}`,
          ),
          h(
            'p',
            null,
            'Outputs keep what these clusters contributed (endpoints, hosts, resources) until they return, are deregistered, or an operator releases them.',
          ),
          h(
            'ul',
            { class: 'held' },
            stale.map((entry) =>
              h(
                'li',
                { 'data-cluster': entry.cluster },
                h(
                  'p',
                  null,
                  h('strong', { class: 'cluster-name' }, entry.cluster),
                  ' ',
                  badge('warn', 'stale'),
                  ' input ',
                  h('code', { title: entry.inputHash }, short(entry.inputHash)),
                  ` (generation ${entry.generation}), carried since `,
                  when(entry.since),
                  '.',
                ),
                h('p', null, 'Let it go: ', command(`meshctl cluster forget-contribution ${entry.cluster}`)),
              ),
            ),
          ),
        ],
  );
}

/** The server's notice as a sentence: capital first, full stop last. */
function sentence(text) {
  return text === '' ? '' : `${text[0].toUpperCase()}${text.slice(1)}${text.endsWith('.') ? '' : '.'}`;
}

// Without Workspaces every cluster speaks for every other: say so while it lasts.
function renderWorkspaces(workspaces) {
  const el = $('workspaces-banner');
  const implicit = workspaces?.mode === 'implicit-global';
  el.hidden = !implicit;
  update(el, implicit ? workspaces : null, () =>
    implicit
      ? [
          h('h2', { id: 'workspaces-title' }, 'Implicit global workspace: no Workspace is defined'),
          h('p', null, sentence(workspaces.notice ?? '')),
          h(
            'p',
            null,
            'Define Workspaces in a file and start the server with ',
            command('--workspaces-file FILE'),
            ' to give each team its own namespaces and names.',
          ),
        ]
      : [],
  );
}

function renderClusters(clusters, safeMode, held) {
  const table = $('clusters');
  const selected = selectedCluster();
  const missing = safeMode.active ? safeMode.missing : [];
  const sorted = [...clusters].sort((a, b) => (a.name < b.name ? -1 : 1));
  $('clusters-empty').hidden = clusters.length > 0;
  $('clusters-title').textContent = `Clusters (${clusters.length})`;
  update(table.tBodies[0], [sorted, selected, missing, held.map((e) => e.cluster)], () =>
    sorted.map((c) => clusterRow(c, c.name === selected, missing.includes(c.name))),
  );
}

function clusterRow(c, selected, missing) {
  const href = `#cluster=${encodeURIComponent(c.name)}`;
  return h(
    'tr',
    {
      'data-cluster': c.name,
      class: [selected ? 'selected' : '', missing ? 'missing' : ''].join(' ').trim() || null,
      onclick: (ev) => {
        // A click on the link navigates by itself; a drag that selected text (a hash to copy) is not a click on the
        // row.
        if (ev.target instanceof Element && ev.target.closest('a')) return;
        if (getSelection()?.toString()) return;
        location.hash = href;
      },
    },
    h(
      'th',
      { scope: 'row' },
      h('a', { href, 'aria-current': selected ? 'true' : null }, c.name),
      missing ? h('div', null, badge('bad', 'holding translation')) : null,
    ),
    h('td', null, warmCell(c.warm)),
    h('td', null, connectionCell(c.connection)),
    h('td', null, inputCell(c.input)),
    h('td', null, outputCell(c.output)),
    h('td', null, c.skipWarming ? badge('warn', 'yes') : 'no'),
  );
}

function warmCell(warm) {
  return [
    warm.status === 'True' ? badge('ok', 'warm') : badge('neutral', 'not warm'),
    h('div', { class: 'detail' }, warm.reason, warm.since ? [' · ', ago(warm.since)] : null),
  ];
}

function connectionCell(conn) {
  if (conn.connected) {
    return [
      badge('ok', 'connected'),
      h(
        'div',
        { class: 'detail' },
        `push ${conn.push} · pull ${conn.pull}`,
        conn.replica ? ` · via ${conn.replica}` : '',
      ),
    ];
  }
  return [
    badge('bad', 'disconnected'),
    h(
      'div',
      { class: 'detail' },
      conn.disconnectedSince ? ['since ', ago(conn.disconnectedSince)] : 'never connected to this replica',
    ),
  ];
}

function inputCell(input) {
  if (!input) return h('span', { class: 'muted' }, 'none');
  return [
    h('code', { title: input.hash }, short(input.hash)),
    input.stale ? [' ', badge('warn', 'stale')] : null,
    h(
      'div',
      { class: 'detail' },
      `gen ${input.generation} · ${plural(input.resources, 'resource')} · `,
      input.receivedAt ? ago(input.receivedAt) : 'read from Redis',
    ),
  ];
}

function outputCell(output) {
  if (!output) return h('span', { class: 'muted' }, 'none yet');
  return [
    h('code', { title: output.hash }, short(output.hash)),
    output.held ? [' ', badge('warn', 'held')] : null,
    h('div', { class: 'detail' }, `${plural(output.resources, 'resource')} · `, appliedText(output)),
  ];
}

function appliedText(output) {
  if (output.appliedHash === output.hash) return 'applied';
  if (output.appliedHash) return `agent has ${short(output.appliedHash)}`;
  return 'not applied yet';
}

// ---- resources -------------------------------------------------------------

const APPROVAL_BADGES = { ACCEPTED: 'ok', WARNING: 'warn', INVALID: 'bad', FAILED: 'bad' };

/** Every Gloo resource with its approval, message and the outputs it produced; INVALID and FAILED first. */
function renderResources(resources) {
  const rank = (r) => (r.approval === 'INVALID' || r.approval === 'FAILED' ? 0 : r.approval === 'WARNING' ? 1 : 2);
  const sorted = [...resources].sort((a, b) => rank(a) - rank(b) || a.source.localeCompare(b.source));
  const bad = resources.filter((r) => rank(r) === 0).length;
  $('resources-empty').hidden = resources.length > 0;
  update($('resources-title'), [resources.length, bad], () => [
    `Resources (${resources.length})`,
    bad > 0 ? [' ', badge('bad', `${bad} not applied as written`)] : null,
  ]);
  update($('resources').tBodies[0], sorted, () => sorted.map(resourceRow));
}

function resourceRow(r) {
  return h(
    'tr',
    { 'data-resource': r.source, 'data-approval': r.approval },
    h('td', null, r.kind),
    h('th', { scope: 'row' }, r.name),
    h('td', null, r.namespace),
    h('td', null, r.cluster),
    h('td', null, badge(APPROVAL_BADGES[r.approval] ?? 'neutral', r.approval)),
    h('td', { class: 'message' }, r.message === '' ? h('span', { class: 'muted' }, '—') : r.message),
    h(
      'td',
      null,
      r.outputs.length === 0
        ? h('span', { class: 'muted' }, 'none')
        : h(
            'ul',
            { class: 'outputs' },
            r.outputs.map((o) =>
              h('li', null, `${o.kind} ${o.namespace}/${o.name}`, h('span', { class: 'muted' }, ` → ${o.cluster}`)),
            ),
          ),
    ),
  );
}

// ---- snapshot view ---------------------------------------------------------

function selectedCluster() {
  const match = /^#cluster=(.+)$/.exec(location.hash);
  return match ? decodeURIComponent(match[1]) : null;
}

/** Fetches the selected cluster's snapshots when the selection or one of its hashes changed. */
async function loadSnapshots(cluster) {
  const key = `${cluster.name} ${cluster.input?.hash ?? ''} ${cluster.output?.hash ?? ''}`;
  const snaps = state.snapshots;
  if (snaps.key === key || snaps.loading) return;
  snaps.loading = true;
  const fetchSnapshot = (kind) =>
    getJson(`/api/v1/clusters/${encodeURIComponent(cluster.name)}/${kind}`).catch((err) =>
      err.status === 404 ? null : { error: err.message },
    );
  const [input, output] = await Promise.all([fetchSnapshot('input'), fetchSnapshot('output')]);
  // After a failed fetch the key stays unset, so the next poll tries again.
  const failed = Boolean(input?.error || output?.error);
  Object.assign(snaps, { cluster: cluster.name, key: failed ? null : key, input, output, loading: false });
  renderSnapshotView();
}

function renderSnapshotView() {
  const el = $('snapshot-view');
  const name = selectedCluster();
  const cluster = state.data?.clusters.find((c) => c.name === name) ?? null;
  el.hidden = name === null;
  if (name === null) return void update(el, null, () => []);
  if (cluster) void loadSnapshots(cluster);
  const snaps = state.snapshots.cluster === name ? state.snapshots : null;
  const inputs = new Map((state.data?.clusters ?? []).map((c) => [c.name, c.input?.hash ?? null]));
  update(
    el,
    [name, cluster === null, snaps && [snaps.key, snaps.input?.error, snaps.output?.error, [...inputs]]],
    () => [
      h(
        'div',
        { class: 'panel-head' },
        h('h2', { id: 'snapshot-title', tabindex: '-1' }, `Snapshots of ${name}`),
        h('button', { type: 'button', class: 'close', onclick: closeSnapshotView }, 'Close'),
      ),
      cluster === null
        ? h('p', null, `Cluster "${name}" is not registered.`)
        : snaps === null
          ? h('p', { class: 'muted' }, 'Loading…')
          : h(
              'div',
              { class: 'snapshots' },
              inputSummary(snaps.input, cluster),
              outputSummary(snaps.output, cluster, inputs),
            ),
    ],
  );
}

function closeSnapshotView() {
  const name = selectedCluster();
  history.replaceState(null, '', location.pathname + location.search);
  render();
  document.querySelector(`#clusters tr[data-cluster="${CSS.escape(name)}"] a`)?.focus();
}

function facts(rows) {
  return h(
    'dl',
    { class: 'kv' },
    rows.filter(Boolean).map(([k, v]) => h('div', null, h('dt', null, k), h('dd', null, v))),
  );
}

function inputSummary(input, cluster) {
  const view = cluster.input?.hash === input?.hash ? cluster.input : null;
  const body =
    input === null
      ? h('p', { class: 'muted' }, 'No input snapshot is held for this cluster.')
      : input.error
        ? h('p', { class: 'state-bad' }, input.error)
        : [
            facts([
              ['Hash', h('code', null, input.hash)],
              ['Epoch', input.epoch],
              ['Generation', String(input.generation)],
              ['Size', `${input.bytes} bytes`],
              view && ['Received', view.receivedAt ? when(view.receivedAt) : 'read from Redis'],
              view?.stale && [
                'State',
                [badge('warn', 'stale'), ' the agent is disconnected; this snapshot is still used'],
              ],
            ]),
            resourceList('input', input.resources),
          ];
  return h('section', { class: 'snapshot', 'aria-label': 'Input snapshot' }, h('h3', null, 'Input'), body);
}

function outputSummary(output, cluster, inputs) {
  if (output === null)
    return h(
      'section',
      { class: 'snapshot' },
      h('h3', null, 'Output'),
      h('p', { class: 'muted' }, 'No output snapshot exists yet for this cluster.'),
    );
  if (output.error)
    return h('section', { class: 'snapshot' }, h('h3', null, 'Output'), h('p', { class: 'state-bad' }, output.error));
  const applied = cluster.output?.hash === output.hash ? appliedText(cluster.output) : null;
  return h(
    'section',
    { class: 'snapshot', 'aria-label': 'Output snapshot' },
    h('h3', null, 'Output'),
    facts([
      ['Hash', h('code', null, output.hash)],
      ['Size', `${output.bytes} bytes`],
      applied && ['Agent', applied],
      cluster.output?.held ? ['Blast-radius guard', badge('warn', 'held')] : null,
    ]),
    h('h4', null, 'Provenance'),
    output.provenance.length === 0
      ? h('p', { class: 'muted' }, 'Built from no input.')
      : h(
          'table',
          { class: 'provenance' },
          h(
            'thead',
            null,
            h(
              'tr',
              null,
              h('th', { scope: 'col' }, 'Input of'),
              h('th', { scope: 'col' }, 'Input hash'),
              h('th', { scope: 'col' }, 'Now'),
            ),
          ),
          h(
            'tbody',
            null,
            output.provenance.map((p) =>
              h(
                'tr',
                { 'data-provenance-cluster': p.cluster },
                h('td', null, p.cluster),
                h('td', null, h('code', { title: p.inputHash }, short(p.inputHash))),
                h('td', null, provenanceState(p, inputs)),
              ),
            ),
          ),
        ),
    resourceList('output', output.resources),
  );
}

function provenanceState(p, inputs) {
  if (!inputs.has(p.cluster)) return badge('neutral', 'deregistered');
  const current = inputs.get(p.cluster);
  if (current === p.inputHash) return badge('ok', 'current input');
  return current ? badge('warn', `newer input ${short(current)}`) : badge('warn', 'input gone');
}

const MAX_LISTED = 2000;

function resourceList(which, resources) {
  const key = `${which}-resources`;
  const counts = new Map();
  for (const r of resources) counts.set(r.kind, (counts.get(r.kind) ?? 0) + 1);
  const listed = resources
    .map((r) => ({
      kind: r.kind,
      name: r.metadata?.namespace ? `${r.metadata.namespace}/${r.metadata.name}` : (r.metadata?.name ?? ''),
    }))
    .sort((a, b) => a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name));
  const rows = listed.slice(0, MAX_LISTED).map((r) => h('tr', null, h('td', null, r.kind), h('td', null, r.name)));
  return h(
    'details',
    {
      open: state.openDetails.has(key),
      ontoggle: (ev) => {
        if (ev.target.open) state.openDetails.add(key);
        else state.openDetails.delete(key);
      },
    },
    h(
      'summary',
      null,
      `${plural(resources.length, 'resource')}`,
      counts.size > 0
        ? h(
            'span',
            { class: 'muted' },
            ` — ${[...counts]
              .sort()
              .map(([k, n]) => `${k} ×${n}`)
              .join(', ')}`,
          )
        : null,
    ),
    resources.length === 0
      ? null
      : h(
          'table',
          { class: 'resources' },
          h(
            'thead',
            null,
            h('tr', null, h('th', { scope: 'col' }, 'Kind'), h('th', { scope: 'col' }, 'Namespace/name')),
          ),
          h('tbody', null, rows),
        ),
    resources.length > MAX_LISTED ? h('p', { class: 'muted' }, `Showing the first ${MAX_LISTED}.`) : null,
  );
}

// ---- start -----------------------------------------------------------------

window.addEventListener('hashchange', () => {
  render();
  if (selectedCluster() !== null) $('snapshot-title')?.focus();
});
document.addEventListener('keydown', (ev) => {
  if (ev.key === 'Escape' && selectedCluster() !== null) closeSnapshotView();
});
$('sign-in-form').addEventListener('submit', signIn);
$('sign-out').addEventListener('click', () => signOut('Signed out.'));
setInterval(tickClocks, 1000);
if (auth.token === null) signOut('This server needs its admin token to show anything.');
else {
  showSignedIn(true);
  startPolling();
}
