// examples/ end to end, as `npm start` (scripts/run-local.ts) runs them: one meshrelay-server
// with --workspaces-file examples/workspaces.yaml, real redis-server, and one meshrelay-agent
// per example cluster on that cluster's manifests. Only supported fields: all ACCEPTED.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { SOURCES_ANNOTATION } from '@meshrelay/api';
import { waitFor } from '@meshrelay/testkit';
import { Mesh, ROOT, listResources, type ListedResource } from './mesh.ts';

const CLUSTERS = ['cluster-a', 'cluster-b'];

/** `Kind/namespace/name@cluster` of every Gloo resource in an example cluster's manifests. */
function glooSourcesIn(cluster: string): string[] {
  const dir = join(ROOT, 'examples', cluster);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) =>
      parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map(
        (d) => d.toJS() as { apiVersion?: string; kind: string; metadata: { name: string; namespace?: string } } | null,
      ),
    )
    .filter((r) => r !== null && (r.apiVersion ?? '').includes('gloo.solo.io/'))
    .map((r) => `${r?.kind}/${r?.metadata.namespace ?? ''}/${r?.metadata.name}@${cluster}`);
}

test('given examples/ run as npm start runs them', async (t) => {
  const mesh = await Mesh.start(t);
  await mesh.startServer('mgmt-0', ['--workspaces-file', join(ROOT, 'examples', 'workspaces.yaml')]);
  for (const cluster of CLUSTERS) await mesh.register(cluster);
  for (const cluster of CLUSTERS) await mesh.startAgent(cluster, { from: cluster });
  for (const cluster of CLUSTERS)
    await mesh.waitForOutput(cluster, (o) => o.provenance.length === 2, 30_000, `first output of ${cluster}`);
  const expected = CLUSTERS.flatMap(glooSourcesIn);
  let listed: ListedResource[] = [];
  await waitFor(
    async () => {
      listed = await listResources(mesh);
      const ids = new Set(listed.map((r) => r.source));
      return expected.every((id) => ids.has(id));
    },
    { timeoutMs: 30_000, message: 'every Gloo resource of examples/ listed by the API' },
  );

  await t.test('when the API lists the resources, then every one is ACCEPTED', () => {
    assert.ok(expected.length > 0, 'examples/ define Gloo resources');
    assert.deepEqual(
      listed.filter((r) => r.approval !== 'ACCEPTED').map((r) => `${r.source}: ${r.approval} ${r.message}`),
      [],
    );
    assert.ok(
      listed.some((r) => r.kind === 'Workspace'),
      'the Workspaces of --workspaces-file are listed too',
    );
  });

  await t.test(
    'when the agents apply their outputs, then every output names the listed Gloo resources it came from',
    () => {
      const ids = new Set(listed.map((r) => r.source));
      for (const cluster of CLUSTERS) {
        const output = mesh.readOutput(cluster);
        assert.ok(output && output.resources.length > 0, `${cluster} has an applied output`);
        for (const r of output.resources) {
          const sources = r.metadata.annotations?.[SOURCES_ANNOTATION];
          assert.ok(
            sources,
            `${cluster}: ${r.kind} ${r.metadata.namespace}/${r.metadata.name} has no ${SOURCES_ANNOTATION}`,
          );
          for (const id of sources.split(','))
            assert.ok(ids.has(id), `${cluster}: ${r.kind} ${r.metadata.name} names ${id}, which the API does not list`);
        }
      }
    },
  );
});
