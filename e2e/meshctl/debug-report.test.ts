import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { buildInputSnapshot } from '@meshrelay/api';
import type { DebugReport } from '@meshrelay/meshctl';
import { meshctlAt, startServer, tempDir } from './harness.ts';

test('given clusters with and without an input, when a debug report is made, then it holds status, clusters and snapshot summaries', async (t) => {
  const { server, url } = await startServer(t);
  await meshctlAt(url, ['cluster', 'register', 'east']);
  await meshctlAt(url, ['cluster', 'register', 'west']);
  const input = buildInputSnapshot({
    cluster: 'east',
    epoch: 'e1',
    generation: 1,
    resources: [
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'web', namespace: 'shop' },
        spec: { ports: [{ port: 80 }] },
      },
    ],
  });
  await server.store.putInput(input);

  const result = await meshctlAt(url, ['debug', 'report']);

  assert.equal(result.code, 0, result.stderr);
  const report = JSON.parse(result.stdout) as DebugReport;
  assert.equal(report.server, url);
  assert.equal(report.status.replica, 'meshctl-test');
  assert.equal(report.status.clusters, 2);
  assert.deepEqual(report.health, { status: 'ok', replica: 'meshctl-test' });
  const byName = new Map(report.clusters.map((c) => [c.cluster.name, c]));
  assert.deepEqual(byName.get('east')?.input, {
    hash: input.hash,
    bytes: input.bytes,
    resources: 1,
    kinds: { Service: 1 },
    epoch: 'e1',
    generation: 1,
  });
  assert.equal(byName.get('west')?.input, null);
  assert.equal(byName.get('west')?.output, null);
});

test('given --file, when a debug report is made, then it is written there and its path printed', async (t) => {
  const { url } = await startServer(t);
  const file = join(await tempDir(t), 'report.json');

  const result = await meshctlAt(url, ['debug', 'report', '--file', file]);

  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, `Debug report written to ${file}\n`);
  const report = JSON.parse(await readFile(file, 'utf8')) as DebugReport;
  assert.deepEqual(report.clusters, []);
  assert.equal(report.status.clusters, 0);
});
