// The Topology view: clusters, the VirtualDestinations their outputs hold, and
// who backs and who receives each one, drawn as inline SVG in three layers —
// exporting clusters, destinations, consuming clusters — from GET
// /api/v1/topology. Every state is said in words (node text, edge labels, the
// list below the drawing); colour and dashes only reinforce it.

import { badge, h, s, short } from './dom.js';

const WIDTH = 980;
const NODE_W = 220;
const NODE_H = 62;
const ROW_GAP = 20;
const HEAD = 40;
const COLUMNS = { export: 16, destination: (WIDTH - NODE_W) / 2, consume: WIDTH - NODE_W - 16 };
// Characters that fit a node's width: the bold name line, and the smaller detail lines.
const MAX_NAME = 26;
const MAX_DETAIL = 32;

const EDGE_WORDS = {
  export: {
    current: 'backs it with its endpoints',
    stale: 'backs it from the last input of its disconnected agent (stale)',
    carried: 'backs it from its carried last known contribution',
    none: 'backs it, with no input on this replica',
  },
  consume: {
    current: 'receives it',
    held: 'its next output is held by the blast-radius guard',
    disconnected: 'its agent is disconnected and receives nothing new',
  },
};

const EDGE_LABELS = {
  stale: 'stale',
  carried: 'carried',
  none: 'no input',
  held: 'held',
  disconnected: 'disconnected',
};

const fit = (text, max) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
const count = (n, one) => `${n} ${one}${n === 1 ? '' : 's'}`;

/** Destinations ordered by the mean row of the clusters they connect to (fewer crossings), then by id. */
function orderDestinations(view) {
  const row = new Map(view.clusters.map((c, i) => [c.name, i]));
  const weight = new Map();
  for (const e of view.edges) {
    const [dest, cluster] = e.role === 'export' ? [e.to, e.from] : [e.from, e.to];
    const w = weight.get(dest) ?? { sum: 0, n: 0 };
    weight.set(dest, { sum: w.sum + (row.get(cluster) ?? 0), n: w.n + 1 });
  }
  const mean = (d) => {
    const w = weight.get(d.id);
    return w ? w.sum / w.n : 0;
  };
  return [...view.destinations].sort((a, b) => mean(a) - mean(b) || (a.id < b.id ? -1 : 1));
}

/** y of each node's top edge per column, each column centred on the tallest. */
function layout(view, destinations) {
  const rows = Math.max(view.clusters.length, destinations.length, 1);
  const columnHeight = (n) => n * NODE_H + Math.max(0, n - 1) * ROW_GAP;
  const tallest = columnHeight(rows);
  const place = (items, key) => {
    const top = HEAD + (tallest - columnHeight(items.length)) / 2;
    return new Map(items.map((item, i) => [key(item), top + i * (NODE_H + ROW_GAP)]));
  };
  return {
    height: HEAD + tallest + 24,
    clusters: place(view.clusters, (c) => c.name),
    destinations: place(destinations, (d) => d.id),
  };
}

function connectionText(c) {
  // Connections are per replica: without a close seen here, the agent may never have dialled this one.
  const seen = c.connected ? 'connected' : c.disconnectedSince ? 'disconnected' : 'not connected';
  return `${seen} · ${c.warm ? 'warm' : 'not warm'}`;
}

/** The state line and severity of a cluster on one side: what it contributes (export) or receives (consume). */
function clusterState(c, side) {
  if (c.holdingTranslation) return ['safe mode waits for it', 'bad'];
  if (side === 'export') {
    return {
      current: ['input current', 'ok'],
      stale: ['stale input (agent away)', 'warn'],
      carried: [`carried input ${short(c.carried?.inputHash)}`, 'warn'],
      none: ['no input', 'neutral'],
    }[c.contribution];
  }
  if (c.heldOutput) return [`output held ${short(c.heldOutput.hash)}`, 'warn'];
  return c.connected ? ['receiving outputs', 'ok'] : ['not receiving (agent away)', 'bad'];
}

function nodeBox(x, y, severity, lines, attrs, tooltip) {
  return s(
    'g',
    { class: `topo-node topo-${severity}`, transform: `translate(${x} ${y})`, ...attrs },
    s('title', null, tooltip),
    s('rect', { width: NODE_W, height: NODE_H, rx: 8 }),
    lines.map(([text, cls], i) =>
      s('text', { x: 12, y: 20 + i * 17, class: cls }, fit(text, i === 0 ? MAX_NAME : MAX_DETAIL)),
    ),
  );
}

function clusterNode(c, side, y) {
  const [stateText, severity] = clusterState(c, side);
  const tooltip = `${c.name}: ${connectionText(c)}; ${stateText}${c.skipWarming ? '; skip warming' : ''}`;
  return nodeBox(
    COLUMNS[side],
    y,
    severity,
    [
      [c.name, 'topo-name'],
      [connectionText(c), 'topo-detail'],
      [stateText, 'topo-state'],
    ],
    { 'data-cluster': c.name, 'data-side': side, 'data-state': severity },
    tooltip,
  );
}

function destinationNode(d, y, byName) {
  const carried = byName.get(d.definedIn)?.contribution === 'carried';
  const host = d.hosts.length > 1 ? `${d.hosts[0]} +${d.hosts.length - 1}` : (d.hosts[0] ?? 'no host');
  const origin = carried ? `carried from ${d.definedIn}` : `${d.namespace} · in ${d.definedIn}`;
  return nodeBox(
    COLUMNS.destination,
    y,
    carried ? 'warn' : 'dest',
    [
      [d.name, 'topo-name'],
      [host, 'topo-detail'],
      [origin, 'topo-state'],
    ],
    { 'data-destination': d.id },
    `VirtualDestination ${d.namespace}/${d.name}, defined in ${d.definedIn}; hosts ${d.hosts.join(', ')}`,
  );
}

// A third of the way along its curve, a label sits near its exporter, where that exporter's
// edges have begun to fan out and the next exporter's edges have not arrived yet.
const LABEL_T = 0.3;

/** The point at LABEL_T on the curve M x1 a C mid a, mid b, x2 b, lifted above the line. */
function labelAt(x1, a, mid, x2, b) {
  const t = LABEL_T;
  const u = 1 - t;
  const x = u ** 3 * x1 + 3 * u * u * t * mid + 3 * u * t * t * mid + t ** 3 * x2;
  const y = (u ** 3 + 3 * u * u * t) * a + (3 * u * t * t + t ** 3) * b;
  return { x: Math.round(x), y: Math.round(y - 5) };
}

/**
 * A cubic curve from the right side of one node to the left side of the next layer's node, labelled when not current.
 */
function edgePath(e, pos, names, labelled) {
  const [x1, y1, x2, y2] =
    e.role === 'export'
      ? [COLUMNS.export + NODE_W, pos.clusters.get(e.from), COLUMNS.destination, pos.destinations.get(e.to)]
      : [COLUMNS.destination + NODE_W, pos.destinations.get(e.from), COLUMNS.consume, pos.clusters.get(e.to)];
  if (y1 === undefined || y2 === undefined) return null;
  const [a, b] = [y1 + NODE_H / 2, y2 + NODE_H / 2];
  const mid = (x1 + x2) / 2;
  const cluster = e.role === 'export' ? e.from : e.to;
  const destination = names.get(e.role === 'export' ? e.to : e.from) ?? '';
  const words = `${cluster} ${e.role === 'export' ? 'exports' : 'consumes'} ${destination}: ${EDGE_WORDS[e.role][e.state] ?? e.state}`;
  // One label per exporter and state: the node beside it says the rest.
  const labelKey = `${e.from} ${e.state}`;
  const label = e.role === 'export' && !labelled.has(labelKey) ? EDGE_LABELS[e.state] : undefined;
  if (label) labelled.add(labelKey);
  return s(
    'g',
    {
      class: `topo-edge edge-${e.state}`,
      'data-role': e.role,
      'data-from': e.from,
      'data-to': e.to,
      'data-state': e.state,
    },
    s('title', null, words),
    s('path', { d: `M ${x1} ${a} C ${mid} ${a}, ${mid} ${b}, ${x2 - 6} ${b}`, 'marker-end': `url(#arrow-${e.state})` }),
    label
      ? s('text', { ...labelAt(x1, a, mid, x2 - 6, b), 'text-anchor': 'middle', class: 'edge-label' }, label)
      : null,
  );
}

function arrowMarkers() {
  return s(
    'defs',
    null,
    ['current', 'stale', 'carried', 'none', 'held', 'disconnected'].map((state) =>
      s(
        'marker',
        {
          id: `arrow-${state}`,
          class: `marker edge-${state}`,
          viewBox: '0 0 10 10',
          refX: 4,
          refY: 5,
          markerWidth: 7,
          markerHeight: 7,
          orient: 'auto-start-reverse',
        },
        s('path', { d: 'M 0 0 L 10 5 L 0 10 z' }),
      ),
    ),
  );
}

function drawing(view) {
  const destinations = orderDestinations(view);
  const pos = layout(view, destinations);
  const byName = new Map(view.clusters.map((c) => [c.name, c]));
  const names = new Map(view.destinations.map((d) => [d.id, d.name]));
  const labelled = new Set();
  const summary = `${view.clusters.length} clusters, ${view.destinations.length} VirtualDestinations, ${view.edges.length} edges; the list below says the same in words`;
  const head = (x, text) => s('text', { x: x + NODE_W / 2, y: 22, 'text-anchor': 'middle', class: 'topo-head' }, text);
  return s(
    'svg',
    {
      class: 'topology',
      viewBox: `0 0 ${WIDTH} ${pos.height}`,
      width: WIDTH,
      height: pos.height,
      role: 'img',
      'aria-label': summary,
    },
    arrowMarkers(),
    head(COLUMNS.export, 'Exporting clusters'),
    head(COLUMNS.destination, 'VirtualDestinations'),
    head(COLUMNS.consume, 'Consuming clusters'),
    view.edges.filter((e) => e.state === 'current').map((e) => edgePath(e, pos, names, labelled)),
    // Edges that need a look are drawn last, over the current ones.
    view.edges.filter((e) => e.state !== 'current').map((e) => edgePath(e, pos, names, labelled)),
    view.clusters.map((c) => [
      clusterNode(c, 'export', pos.clusters.get(c.name)),
      clusterNode(c, 'consume', pos.clusters.get(c.name)),
    ]),
    destinations.length === 0
      ? s(
          'text',
          { x: WIDTH / 2, y: HEAD + 24, 'text-anchor': 'middle', class: 'topo-detail' },
          'No output holds a VirtualDestination',
        )
      : destinations.map((d) => destinationNode(d, pos.destinations.get(d.id), byName)),
  );
}

/**
 * What needs a look, one line per cluster and concern, in words: the drawing's text alternative for what matters in an
 * incident.
 */
function attention(view) {
  const consumes = (name) => view.edges.filter((e) => e.role === 'consume' && e.to === name).length;
  const exports = (name) => view.edges.filter((e) => e.role === 'export' && e.from === name).length;
  const items = [];
  for (const c of view.clusters) {
    const say = (kind, text) =>
      items.push(
        h(
          'li',
          { 'data-cluster': c.name, 'data-attention': kind },
          badge(kind === 'holding' ? 'bad' : 'warn', kind),
          ' ',
          h('strong', null, c.name),
          ` — ${text}`,
        ),
      );
    if (c.holdingTranslation)
      say('holding', 'missing: safe mode holds translation until it returns, is deregistered or set to skip warming.');
    if (c.contribution === 'carried')
      say(
        'carried',
        `absent; its last known contribution (input ${short(c.carried.inputHash)}) still backs ${count(exports(c.name), 'destination')}.`,
      );
    if (c.contribution === 'stale')
      say(
        'stale',
        `agent disconnected; its last input still backs ${count(exports(c.name), 'destination')}, and it receives nothing new.`,
      );
    if (c.heldOutput)
      say('held', `next output ${short(c.heldOutput.hash)} held by the blast-radius guard: ${c.heldOutput.message}.`);
    else if (!c.connected && c.contribution !== 'stale' && c.contribution !== 'carried' && consumes(c.name) > 0) {
      say('disconnected', `agent not connected; receives nothing new for ${count(consumes(c.name), 'destination')}.`);
    }
  }
  return items.length === 0
    ? h(
        'p',
        { class: 'muted', id: 'topology-attention' },
        'Every contribution is current and every output is delivered.',
      )
    : h('ul', { class: 'topology-attention', id: 'topology-attention' }, items);
}

function legend() {
  const sample = (state, text) =>
    h(
      'li',
      null,
      s(
        'svg',
        { width: 44, height: 12, class: `legend-line edge-${state}`, 'aria-hidden': 'true' },
        s('path', { d: 'M 2 6 L 42 6' }),
      ),
      ` ${text}`,
    );
  return h(
    'ul',
    { class: 'topology-legend', 'aria-label': 'Legend' },
    sample('current', 'current'),
    sample('stale', "stale: the exporter's agent is away, its last input is used"),
    sample('carried', "carried: the exporter's input is gone, its last known contribution is kept"),
    sample('held', "held: the blast-radius guard holds the consumer's next output"),
    sample('disconnected', "disconnected: the consumer's agent is away"),
  );
}

/** The plane's own state on this replica: is translation running, or what does safe mode wait for. */
function planeLine(view) {
  const { active, missing } = view.safeMode;
  return h(
    'p',
    { id: 'topology-plane', 'data-safe-mode': active ? 'held' : 'open' },
    `Replica ${view.replica}: `,
    active
      ? [
          badge('bad', 'safe mode'),
          ` translation is halted, waiting for ${missing.length > 0 ? missing.join(', ') : 'the safe-start window'}.`,
        ]
      : [
          badge('ok', 'translating'),
          ` ${count(view.clusters.length, 'cluster')}, ${count(view.destinations.length, 'VirtualDestination')}.`,
        ],
  );
}

// Past a few dozen destinations a drawing is no longer read; the Resources view lists them all.
const MAX_DRAWN = 40;

/** The view limited to MAX_DRAWN destinations, those with an edge that is not current first. */
function drawnPart(view) {
  if (view.destinations.length <= MAX_DRAWN) return view;
  const troubled = new Set(
    view.edges.filter((e) => e.state !== 'current').map((e) => (e.role === 'export' ? e.to : e.from)),
  );
  const kept = new Set(
    [...view.destinations]
      .sort((a, b) => Number(troubled.has(b.id)) - Number(troubled.has(a.id)) || (a.id < b.id ? -1 : 1))
      .slice(0, MAX_DRAWN)
      .map((d) => d.id),
  );
  return {
    ...view,
    destinations: view.destinations.filter((d) => kept.has(d.id)),
    edges: view.edges.filter((e) => kept.has(e.role === 'export' ? e.to : e.from)),
  };
}

/** The content of the Topology section for one answer of GET /api/v1/topology. */
export function topologyContent(view) {
  if (view.clusters.length === 0) return h('p', { class: 'muted' }, 'No cluster is registered.');
  const drawn = drawnPart(view);
  return [
    planeLine(view),
    drawn === view
      ? null
      : h(
          'p',
          { class: 'muted', id: 'topology-limit' },
          `Drawing ${drawn.destinations.length} of ${view.destinations.length} VirtualDestinations, those with stale, carried, held or disconnected edges first.`,
        ),
    h('div', { class: 'topology-wrap' }, drawing(drawn)),
    legend(),
    h('h3', null, 'Needs attention'),
    attention(view),
  ];
}
