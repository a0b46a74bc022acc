// Registry writes from two management replicas sharing one state directory: a revocation
// answered by replica A must survive the edits replica B makes to the same cluster at the same
// time (PATCH /api/v1/clusters/:name), on disk and on both replicas. B's edit applies its change
// to the record as it is on disk when it writes, not to the copy B held before A's write.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { waitFor } from '@meshrelay/testkit';
import type { RevocationResponse } from '@meshrelay/registry';
import { openPush, pushSnapshot, service } from '../packages/mgmt-server/test/harness.ts';
import { Mesh, type ServerProc } from './mesh.ts';
import { mtlsClientOf, registerAt, type RelayIdentity } from './relay-identity.ts';

const TRIES = 8;
const EDITS_PER_TRY = 6;
const QUIET_HEARTBEATS = ['--heartbeat-interval', '500', '--heartbeat-timeout', '60000'];

interface Registered {
  readonly token: string;
  readonly caPem: string;
}

async function registerCluster(mesh: Mesh, server: ServerProc, name: string): Promise<Registered> {
  const reg = await mesh.api<{ token: string; relay: { caBundlePem: string } }>('/api/v1/clusters', server, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  return { token: reg.token, caPem: reg.relay.caBundlePem };
}

/** What the server makes of a Push with `id`: 'accepted', or the refusal's details. */
function pushOutcome(t: TestContext, server: ServerProc, caPem: string, id: RelayIdentity): Promise<string> {
  const stream = openPush(mtlsClientOf(t, server, caPem, id));
  return new Promise((resolve) => {
    const timer = setTimeout(() => finish('no answer within 10 s'), 10_000);
    const finish = (outcome: string): void => {
      clearTimeout(timer);
      stream.removeAllListeners('data');
      stream.on('error', () => undefined);
      stream.cancel();
      resolve(outcome);
    };
    stream.on('data', (m: { ack?: { accepted?: boolean } | null }) => {
      if (m.ack) finish(m.ack.accepted ? 'accepted' : 'nacked');
    });
    stream.on('error', (err: { details?: string }) => finish(err.details ?? String(err)));
    pushSnapshot(stream, id.cluster, 1, [service('web')]);
  });
}

/** B's edits: skipWarming toggled, each PATCH sent when the previous one was answered. */
async function editRepeatedly(mesh: Mesh, server: ServerProc, name: string): Promise<void> {
  for (let i = 0; i < EDITS_PER_TRY; i++) await mesh.patchCluster(name, { skipWarming: i % 2 === 0 }, server);
}

test(`given two replicas sharing a state directory, when A revokes a cluster while B edits it, then the mark holds on disk and on both replicas (${TRIES} tries)`, async (t) => {
  const mesh = await Mesh.start(t, { redis: false });
  const a = await mesh.startServer('mgmt-a', QUIET_HEARTBEATS);
  const b = await mesh.startServer('mgmt-b', QUIET_HEARTBEATS);
  const lost: string[] = [];
  for (let i = 0; i < TRIES; i++) {
    const name = `race-${i}`;
    const { token, caPem } = await registerCluster(mesh, a, name);
    const old = await registerAt(a, caPem, name, token);
    // B must know the cluster before it can edit it.
    await waitFor(async () => (await fetch(`${b.api}/api/v1/clusters/${name}`, { headers: mesh.authorization() })).ok, {
      timeoutMs: 10_000,
      message: `${b.name} to see ${name}`,
    });
    const [revoked] = await Promise.all([
      mesh.api<RevocationResponse>(`/api/v1/clusters/${name}/revoke`, a, { method: 'POST' }),
      editRepeatedly(mesh, b, name),
    ]);
    const onDisk = JSON.parse(
      readFileSync(join(mesh.dir, 'server-state', 'registry', 'clusters', `${name}.json`), 'utf8'),
    ) as { spec: Record<string, unknown> };
    const mark = onDisk.spec['revokeCertificatesBefore'];
    if (mark === undefined || Date.parse(String(mark)) !== Date.parse(revoked.revokedBefore)) {
      lost.push(`try ${i}: mark on disk ${String(mark)}, answered ${revoked.revokedBefore}`);
      continue;
    }
    assert.equal(onDisk.spec['skipWarming'], (EDITS_PER_TRY - 1) % 2 === 0, `try ${i}: B's last edit is on disk too`);
    for (const server of [a, b]) {
      let outcome = '';
      await waitFor(
        async () => /MESHRELAY_ERR_CERTIFICATE_REVOKED/.test((outcome = await pushOutcome(t, server, caPem, old))),
        {
          timeoutMs: 15_000,
          intervalMs: 250,
          message: `try ${i}: ${server.name} to refuse the revoked certificate (last outcome: ${outcome})`,
        },
      ).catch(() => {
        lost.push(`try ${i}: ${server.name} answered the revoked certificate with "${outcome}"`);
      });
    }
  }
  assert.deepEqual(lost, [], `the revocation was lost in ${lost.length} of ${TRIES} tries`);
});
