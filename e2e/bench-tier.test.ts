// `npm run bench -- --tier …` end to end on a tiny custom tier: real redis-server, a real
// meshrelay-server process, load-generator processes of relay clients, real agent processes (two
// clusters' discovery and apply, and the footprint's).
// Asserts what the run measured and wrote, never how fast it was.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { ROOT } from './mesh.ts';

const run = promisify(execFile);
const IN_PROCESS =
  '<!-- bench-section:in-process -->\n# Meshrelay benchmark results\n\n(an earlier in-process run)\n<!-- /bench-section:in-process -->\n';

/** The value cell of the figures row whose label starts with `label`. */
function figure(section: string, label: string): string {
  const row = section.split('\n').find((line) => line.startsWith(`| ${label}`));
  assert.ok(row, `no figures row "${label}"`);
  return row.split('|')[2]?.trim() ?? '';
}

/** The "Whole-path changes" lines of a section. */
function wholePathChanges(section: string): string[] {
  return section.split('\n').filter((l) => /^- (address|readiness) #\d+ /.test(l));
}

test('given a results file with an in-process section, when the tier bench runs a tiny custom tier, then it writes a complete section of its own and keeps the other', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'bench-tier-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const results = join(dir, 'RESULTS.md');
  await writeFile(results, IN_PROCESS);
  const args = [
    'bench/run.ts',
    '--tier',
    'S',
    '--clusters',
    '3',
    '--services',
    '20',
    '--endpoints',
    '2',
    '--changes',
    '20',
    '--settle-ms',
    '100',
    '--footprint-idle-seconds',
    '1',
    '--footprint-settle-ms',
    '200',
    '--real-agents',
    '2',
    '--kind-changes',
    '2',
    '--stagger-seconds',
    '1',
    '--settle-idle-seconds',
    '2',
    '--results',
    results,
  ];
  await run(process.execPath, args, { cwd: ROOT, timeout: 280_000, maxBuffer: 16 * 1024 * 1024 });
  const text = await readFile(results, 'utf8');

  assert.ok(text.startsWith(IN_PROCESS.trim()), 'the in-process section is kept, first');
  const section = /<!-- bench-section:tier-custom -->\n([\s\S]*?)\n<!-- \/bench-section:tier-custom -->/.exec(
    text,
  )?.[1];
  assert.ok(section, 'a tier-custom section is written');
  assert.match(section, /\*\*Every phase finished\.\*\*/);
  assert.match(figure(section, 'cold start: every agent applied its first complete output'), /^\d+ ms$/);
  assert.match(figure(section, 'one endpoint changed'), /\(n = 20\)$/);
  assert.match(figure(section, 'bytes on the wire per affected agent'), /^p50 [\d.]+ KiB/);
  assert.equal(figure(section, 'bytes sent to agents the change did not affect'), '0 B');
  // The storm's resync is timed on the relay clients' clusters (real agents log no pull-stream opening).
  assert.equal(figure(section, 'reconnect storm: bytes re-sent'), '0 B to 1 agents');
  assert.equal(figure(section, 'reconnect storm: re-applies'), '0');
  assert.match(figure(section, 'server RSS after convergence'), /^[\d.]+ MiB$/);
  assert.match(figure(section, 'server RSS once settled (idle 2 s after going quiet'), /^[\d.]+ MiB$/);
  assert.equal(
    section.split('\n').filter((l) => /^- #\d+ cluster-\d\/svc-\d+ → 10\.99\./.test(l)).length,
    20,
    'every change is listed',
  );
  assert.match(section, /## Light agent \(issue 11\.5\)\n\nOne `meshrelay-agent` process/);

  // The whole path: two clusters run real agents; both change kinds went through their manifests.
  assert.match(section, /Real agents: cluster-0, cluster-2 each run as a `meshrelay-agent` process/);
  const changes = wholePathChanges(section);
  assert.equal(changes.length, 4, 'two address changes and a readiness unready/ready pair');
  assert.match(
    changes[0] ?? '',
    /^- address #0 cluster-0\/svc-000 → 10\.98\.0\.1 \(manifest edit, real agent\): 1 agents applied/,
  );
  assert.match(
    changes[1] ?? '',
    /^- address #1 cluster-1\/svc-000 → 10\.98\.0\.2 \(offered by a relay client\): 1 agents applied/,
  );
  // The readiness flip changes every cluster's output: every agent, real or not, applied it.
  assert.match(
    changes[2] ?? '',
    /^- readiness #0 cluster-0\/svc-000 ready false \(manifest edit, real agent\): 3 agents applied/,
  );
  assert.match(
    changes[3] ?? '',
    /^- readiness #1 cluster-0\/svc-000 ready true \(manifest edit, real agent\): 3 agents applied/,
  );
  assert.match(figure(section, '… changes that sent bytes to an agent whose output did not change'), /^0$/);
  assert.match(
    figure(section, 'staggered cold start'),
    /^\d+ ms \(real agents \d+ ms; the last cluster started \d+ ms into the window, the server accepted the last input \d+ ms into it\)$/,
  );
  assert.match(
    figure(section, 'server RSS, sampled every 500 ms'),
    /^high-water \(VmHWM\) [\d.]+ MiB, first read during "[^"]+"; highest sample [\d.]+ MiB during "[^"]+", \d+ s into the run \(\d+ samples\)$/,
  );
});

test('given a tier whose inputs would not fit in the bench process, when it runs, then the section says the workload phase stopped and why, and nothing else ran', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'bench-tier-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const results = join(dir, 'RESULTS.md');
  await writeFile(results, IN_PROCESS);
  // A 160 MiB heap: 200 tier S clusters project to more than the 40 % of it the inputs may take.
  const args = [
    '--max-old-space-size=160',
    'bench/run.ts',
    '--tier',
    'S',
    '--clusters',
    '200',
    '--footprint-idle-seconds',
    '0',
    '--results',
    results,
  ];
  await run(process.execPath, args, { cwd: ROOT, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 });
  const section = /<!-- bench-section:tier-custom -->\n([\s\S]*?)\n<!-- \/bench-section:tier-custom -->/.exec(
    await readFile(results, 'utf8'),
  )?.[1];

  assert.ok(section, 'a tier-custom section is written');
  assert.match(section, /\*\*The run stopped at phase generate workload: the workload does not fit in this process/);
  assert.match(
    section,
    /the workload does not fit in this process: one cluster's inputs keep \d+ MiB of heap, so 200 clusters would keep/,
  );
  assert.match(figure(section, 'cold start: every agent applied its first output'), /^–$/);
});
