// The interest-scope bench at a tiny size, through the entry `npm run bench -- --interest` calls, against a
// temp results file. Asserts what the section says and how its figures relate, never how fast anything was.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { MeshrelayError } from '@meshrelay/api';
import { parseInterestArgs, runInterestBench } from '../interest-scope.ts';

const TINY = ['--clusters', '4', '--services', '40', '--endpoints', '2', '--nodes', '2', '--changes', '3'];

/** The scoped / unscoped ratio of the row starting with `label` in the table under `heading`. */
function ratioOf(section: string, heading: string, label: string): number {
  const table = section.slice(section.indexOf(heading));
  const row = table.split('\n').find((l) => l.startsWith(`| ${label}`));
  assert.ok(row !== undefined, `row "${label}" under "${heading}"`);
  return Number(row.split('|').at(-2)?.trim());
}

test('given the interest bench at a tiny size', { timeout: 180_000 }, async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'meshrelay-interest-bench-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const results = path.join(dir, 'RESULTS.md');
  await writeFile(results, '<!-- bench-section:xds -->\nkept\n<!-- /bench-section:xds -->\n');

  await t.test('when --homes is absent, then one section holds the H = 5 and the every-cluster run', async () => {
    await runInterestBench(TINY, results);
    const file = await readFile(results, 'utf8');
    assert.match(file, /<!-- bench-section:xds -->\nkept\n/, 'other sections are kept');
    const section = /<!-- bench-section:interest-scope -->\n([\s\S]*?)\n<!-- \/bench-section:interest-scope -->/.exec(
      file,
    )?.[1];
    assert.ok(section !== undefined, 'the interest-scope section is written');
    assert.ok(section.includes(`\`npm run bench -- --interest ${TINY.join(' ')}\``), 'the command line');
    assert.match(section, /Run on \d{4}-\d\d-\d\dT.* cores, .* GiB RAM, Node v/, 'the date and the machine');
    assert.match(section, /H = the cluster count/, 'the paragraph on the two workloads');
    const small = '### H = 4:';
    const every = '### H = 4 (the tier workload):';
    // With 4 clusters, H = 5 is capped at 4, which is every cluster: one run.
    assert.ok(section.includes(every) && !section.includes(small), section);
  });

  await t.test('when there are more clusters than 5, then both runs are written with every row', async () => {
    const argv = ['--clusters', '8', ...TINY.slice(2)];
    const section = await runInterestBench(argv, results);
    const small = '### H = 5:';
    const every = '### H = 8 (the tier workload):';
    for (const heading of [small, every]) {
      assert.ok(section.includes(heading), `${heading} in\n${section}`);
      for (const label of [
        'output per cluster',
        'clusters sent an output per change',
        'bytes per agent per change',
        'server CPU per change: translation',
      ])
        assert.ok(Number.isFinite(ratioOf(section, heading, label)), `${label} under ${heading}`);
    }
    assert.ok(ratioOf(section, small, 'output per cluster') < 1, 'scoping leaves destinations out at H = 5');
    assert.ok(ratioOf(section, small, 'clusters sent an output per change') <= 1);
    assert.ok(ratioOf(section, small, 'bytes per agent per change') <= 1);
    for (const label of ['output per cluster', 'clusters sent an output per change', 'bytes per agent per change'])
      assert.equal(ratioOf(section, every, label), 1, `${label}: nothing to leave out when every cluster is a home`);
  });

  await t.test('when --homes is given, then only that run is written', async () => {
    const section = await runInterestBench([...TINY, '--homes', '2'], results);
    assert.equal(section.match(/^### H = /gm)?.length, 1);
    assert.ok(section.includes('### H = 2:'));
  });
});

test('given bad flags, then the error names the flag', () => {
  assert.throws(
    () => parseInterestArgs(['--clusterz', '4']),
    (e: unknown) => {
      assert.ok(e instanceof MeshrelayError);
      assert.match(e.message, /--clusterz/);
      return true;
    },
  );
  assert.throws(() => parseInterestArgs(['--homes', 'two']), /--homes: "two" is not a whole number/);
  assert.throws(() => parseInterestArgs(['--call-share', '150']), /--call-share: "150" is more than 100 %/);
});
