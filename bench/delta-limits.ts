/**
 * `node bench/delta-limits.ts`: what the patch deltas of issue 30 (rows 1–4) cost a receiver
 * taking them in (resolveDelta, as the server's push handler calls it, with its default 16 MiB
 * and 50,000-resource limits): the longest the event loop was held (the longest gap between two
 * ticks of a 1 ms timer), the wall time, the peak RSS above the RSS before, and the outcome.
 * Each row runs in a child process of its own, so one row's garbage and peak do not count in
 * another's. Prints a Markdown table.
 */
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import {
  SnapshotAssembler,
  buildInputSnapshot,
  encodeSnapshotFramesSync,
  resolveDelta,
  resourceId,
  sha256Hex,
  type InputSnapshot,
  type Resource,
} from '@meshrelay/api';

const LIMITS = { maxBytes: 16 * 1024 * 1024, maxResources: 50_000 };

function service(name: string, extra: Record<string, unknown> = {}): Resource {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default' },
    spec: { ports: [{ name: 'http', port: 8080, protocol: 'TCP' }], ...extra },
  };
}

function items(count: number, itemBytes: number): object[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `item-${i}`,
    note: 'x'.repeat(Math.max(0, itemBytes - 30)),
  }));
}

function nested(levels: number): object {
  let value: object = {};
  for (let i = 1; i < levels; i++) value = { n: value };
  return value;
}

interface Row {
  readonly name: string;
  readonly base: Resource;
  readonly ops: readonly object[];
}

const ROWS: Record<string, () => Row> = {
  '1: 22 copies of a 21,845-item array (12 MiB)': () => ({
    name: 'big',
    base: service('big', { items: items(21_845, 560) }),
    ops: Array.from({ length: 22 }, (_, i) => ({
      op: 'copy',
      from: '/spec/items',
      path: `/spec/c${String(i).padStart(2, '0')}`,
    })),
  }),
  '2: 64 appends of a 1 MiB value': () => ({
    name: 'big',
    base: service('big', { blob: 'b'.repeat(1024 * 1024), arr: [] }),
    ops: Array.from({ length: 64 }, () => ({ op: 'copy', from: '/spec/blob', path: '/spec/arr/-' })),
  }),
  '3: 3,000 moves in a 5,000-item array': () => ({
    name: 'big',
    base: service('big', { items: items(5000, 200) }),
    ops: Array.from({ length: 3000 }, () => ({ op: 'move', from: '/spec/items/0', path: '/spec/items/4999' })),
  }),
  '3: 1,500 moves in a 5,000-item array': () => ({
    name: 'big',
    base: service('big', { items: items(5000, 200) }),
    ops: Array.from({ length: 1500 }, () => ({ op: 'move', from: '/spec/items/0', path: '/spec/items/4999' })),
  }),
  '4: a value 150 levels deep': () => ({
    name: 'big',
    base: service('big'),
    ops: [{ op: 'add', path: '/spec/deep', value: nested(148) }],
  }),
  '4: a value 3,000 levels deep': () => ({
    name: 'big',
    base: service('big'),
    ops: [{ op: 'add', path: '/spec/deep', value: nested(2998) }],
  }),
};

/** Takes in one row's delta against its base and prints one JSON line of what it cost. */
async function runRow(label: string): Promise<void> {
  const row = (ROWS[label] as () => Row)();
  const base: InputSnapshot = buildInputSnapshot({
    cluster: 'a',
    epoch: 'e',
    generation: 1,
    resources: [row.base, service('small')],
  });
  const payload = '[]';
  const frames = encodeSnapshotFramesSync({
    epoch: 'e',
    generation: 2,
    hash: 'f'.repeat(64),
    encoding: payload,
    delta: {
      baseHash: base.hash,
      payloadHash: sha256Hex(payload),
      deletedKeys: [],
      patches: [{ key: resourceId(row.base), ops: JSON.stringify(row.ops) }],
    },
  });
  const assembler = new SnapshotAssembler(frames.header, LIMITS);
  for (const chunk of frames.chunks) assembler.add(chunk);
  const assembled = await assembler.finish();
  const rssBefore = process.memoryUsage().rss;
  let last = performance.now();
  let longest = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 1);
  const start = performance.now();
  let outcome: string;
  try {
    await resolveDelta(assembled, base, LIMITS);
    outcome = 'taken';
  } catch (err) {
    const e = err as { code?: string; message?: string };
    outcome = `${e.code ?? 'Error'}: ${(e.message ?? '').slice(0, 140)}`;
  }
  const wall = performance.now() - start;
  longest = Math.max(longest, performance.now() - last);
  clearInterval(ticker);
  const peak = process.resourceUsage().maxRSS * 1024;
  process.stdout.write(
    `${JSON.stringify({ label, blockedMs: Math.round(longest), wallMs: Math.round(wall), rssGrowthMiB: Math.max(0, (peak - rssBefore) / 2 ** 20), outcome })}\n`,
  );
}

function main(): void {
  const row = process.argv.indexOf('--row');
  if (row >= 0) {
    void runRow(process.argv[row + 1] ?? '');
    return;
  }
  console.log('| row | event loop held (longest) | wall | peak RSS above start | outcome |\n|---|---|---|---|---|');
  for (const label of Object.keys(ROWS)) {
    const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--row', label], {
      encoding: 'utf8',
      maxBuffer: 1 << 24,
    });
    const line = child.stdout.trim().split('\n').at(-1) ?? '';
    try {
      const r = JSON.parse(line) as { blockedMs: number; wallMs: number; rssGrowthMiB: number; outcome: string };
      console.log(
        `| ${label} | ${r.blockedMs} ms | ${r.wallMs} ms | ${r.rssGrowthMiB.toFixed(1)} MiB | ${r.outcome.replaceAll('|', '/')} |`,
      );
    } catch {
      console.log(
        `| ${label} | — | — | — | process ended: ${child.status ?? child.signal} ${(child.stderr.split('\n').find((l) => /Error/.test(l)) ?? '').slice(0, 120)} |`,
      );
    }
  }
}

main();
