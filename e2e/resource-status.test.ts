// Resource status end to end: real redis-server, one meshrelay-server process, one meshrelay-agent
// process (file provider) whose manifests hold a good RouteTable and an AccessPolicy that sets a
// security field Meshrelay does not implement; meshctl runs as its own process.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { statusFixture, waitFor } from '@meshrelay/testkit';
import { Mesh, ROOT } from './mesh.ts';

const FIXTURE_NAMES = new Set(['reviews-route', 'reviews-lockdown']);
const MESHCTL_BIN = join(ROOT, 'packages/meshctl/bin/meshctl.js');

interface Listed {
  kind: string;
  name: string;
  approval: string;
  message: string;
  outputs: { kind: string }[];
}

/** Runs meshctl as a child process against the mesh's server; never rejects on a non-zero exit. */
async function meshctl(mesh: Mesh, args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const server = mesh.servers[0];
  assert.ok(server);
  const env = { ...process.env, MESHRELAY_ADMIN_TOKEN: mesh.adminToken(), MESHCTL_SERVER: server.api };
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [MESHCTL_BIN, ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

test('given a good RouteTable and an AccessPolicy using an unsupported security field, then the API, meshctl and the agent status file all show ACCEPTED and INVALID', async (t) => {
  const mesh = await Mesh.start(t);
  await mesh.startServer();
  await mesh.register('cluster-a');
  const agent = await mesh.startAgent('cluster-a', { from: 'cluster-a' });
  // examples/cluster-a already defines the reviews Service the fixture routes to.
  for (const r of statusFixture().filter((r) => r.kind !== 'Service'))
    mesh.writeManifest('cluster-a', `status-${r.kind.toLowerCase()}-${r.metadata.name}.yaml`, JSON.stringify(r));

  // The API lists both, with their approvals.
  let listed: Listed[] = [];
  await waitFor(
    async () => {
      listed = (await mesh.api<{ resources: Listed[] }>('/api/v1/resources?cluster=cluster-a')).resources.filter((r) =>
        FIXTURE_NAMES.has(r.name),
      );
      return listed.length === 2;
    },
    { timeoutMs: 30_000, message: 'both fixture resources listed by the API' },
  );
  const byKind = new Map(listed.map((r) => [r.kind, r]));
  assert.equal(byKind.get('RouteTable')?.approval, 'ACCEPTED');
  assert.deepEqual(
    byKind.get('RouteTable')?.outputs.map((o) => o.kind),
    ['VirtualService'],
  );
  assert.equal(byKind.get('AccessPolicy')?.approval, 'INVALID');
  assert.match(byKind.get('AccessPolicy')?.message ?? '', /enforcementLayers/);

  // meshctl get shows the INVALID policy; meshctl check fails naming it.
  const get = await meshctl(mesh, ['get', 'accesspolicy']);
  assert.equal(get.code, 0, get.stderr);
  assert.match(get.stdout, /^AccessPolicy +bookinfo +reviews-lockdown +cluster-a +INVALID +.*enforcementLayers/m);
  const check = await meshctl(mesh, ['check']);
  assert.equal(check.code, 1, check.stdout);
  assert.match(check.stdout, /^\[FAIL\] resources: .*AccessPolicy bookinfo\/reviews-lockdown in cluster-a is INVALID/m);

  // cluster-a's agent wrote the status file beside its manifests.
  const file = join(agent.manifestsDir, '.meshrelay-status', 'AccessPolicy.bookinfo.reviews-lockdown.yaml');
  let written: { status?: { state?: { approval?: string; message?: string } } } = {};
  await waitFor(
    async () => {
      written = parse(await readFile(file, 'utf8')) as typeof written;
      return written.status?.state?.approval === 'INVALID';
    },
    { timeoutMs: 20_000, message: `the agent wrote ${file} with approval INVALID` },
  );
  assert.match(written.status?.state?.message ?? '', /enforcementLayers/);
});
