// Revoking a cluster (meshctl cluster revoke / POST /api/v1/clusters/:name/revoke) with two
// management replicas sharing one state directory, and certificate expiry on open streams.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { status, type ServiceError } from '@grpc/grpc-js';
import { waitFor } from '@meshrelay/testkit';
import type { RevocationResponse } from '@meshrelay/registry';
import { next, openPush, pushSnapshot, service, streamError } from '../packages/mgmt-server/test/harness.ts';
import { Mesh, type ServerProc } from './mesh.ts';
import { mtlsClientOf, registerAt, renewOver, type RelayIdentity } from './relay-identity.ts';

// Streams stay up on their own for the length of a test: closing them is the server's decision here.
const QUIET_HEARTBEATS = ['--heartbeat-interval', '500', '--heartbeat-timeout', '60000'];

interface Replicas {
  readonly mesh: Mesh;
  readonly a: ServerProc;
  readonly b: ServerProc;
  readonly caPem: string;
}

async function twoReplicas(t: TestContext, flags: readonly string[] = []): Promise<Replicas> {
  const mesh = await Mesh.start(t, { redis: false });
  const a = await mesh.startServer('mgmt-a', [...QUIET_HEARTBEATS, ...flags]);
  const b = await mesh.startServer('mgmt-b', [...QUIET_HEARTBEATS, ...flags]);
  await mesh.register('east');
  return { mesh, a, b, caPem: readFileSync(join(mesh.dir, 'credentials', 'east', 'relay-ca.pem'), 'utf8') };
}

function tokenFile(mesh: Mesh, cluster: string): string {
  return join(mesh.dir, 'credentials', cluster, 'token');
}

function revoke(mesh: Mesh, server: ServerProc, cluster: string): Promise<RevocationResponse> {
  return mesh.api<RevocationResponse>(`/api/v1/clusters/${cluster}/revoke`, server, { method: 'POST' });
}

/** Opens a Push stream at `server` with `id` and waits until its first snapshot is acked. */
async function connectedPush(t: TestContext, r: Replicas, server: ServerProc, id: RelayIdentity) {
  const stream = openPush(mtlsClientOf(t, server, r.caPem, id));
  pushSnapshot(stream, id.cluster, 1, [service('web')]);
  await next(stream, (m) => m.ack ?? undefined);
  return stream;
}

test('given a stream on replica B, when the cluster is revoked through replica A, then B closes it and both replicas refuse the old certificate', async (t) => {
  const r = await twoReplicas(t);
  const old = await registerAt(r.a, r.caPem, 'east', readFileSync(tokenFile(r.mesh, 'east'), 'utf8'));
  const stream = await connectedPush(t, r, r.b, old);
  const closed = streamError(stream, 30_000);
  const revoked = await revoke(r.mesh, r.a, 'east');
  const err = await closed;
  assert.equal(err.code, status.UNAUTHENTICATED);
  assert.match(err.details, /MESHRELAY_ERR_CERTIFICATE_REVOKED/);
  for (const server of [r.a, r.b]) {
    const refused = await streamError(openPush(mtlsClientOf(t, server, r.caPem, old)));
    assert.equal(refused.code, status.UNAUTHENTICATED, server.name);
    assert.match(refused.details, /MESHRELAY_ERR_CERTIFICATE_REVOKED/, server.name);
  }
  assert.ok(Date.parse(revoked.revokedBefore) > 0);
});

test('given a revoked cluster, when its old certificate asks to be renewed on either replica, then Renew is refused', async (t) => {
  const r = await twoReplicas(t);
  const old = await registerAt(r.a, r.caPem, 'east', readFileSync(tokenFile(r.mesh, 'east'), 'utf8'));
  await revoke(r.mesh, r.b, 'east');
  for (const server of [r.a, r.b]) {
    // Replica A learns of the revocation through the shared state directory.
    await waitFor(
      async () => {
        const refused = await renewOver(mtlsClientOf(t, server, r.caPem, old), 'east').then(
          () => undefined,
          (e: ServiceError) => e,
        );
        return refused?.code === status.UNAUTHENTICATED && /MESHRELAY_ERR_CERTIFICATE_REVOKED/.test(refused.details);
      },
      { timeoutMs: 15_000, message: `${server.name} to refuse Renew with the revoked certificate` },
    );
  }
});

test('given a revoked cluster, when registering with the old token or the new one, then only the new one works and its certificate is accepted on both replicas', async (t) => {
  const r = await twoReplicas(t);
  const oldToken = readFileSync(tokenFile(r.mesh, 'east'), 'utf8');
  const revoked = await revoke(r.mesh, r.a, 'east');
  await assert.rejects(
    registerAt(r.a, r.caPem, 'east', oldToken),
    (e: ServiceError) => e.code === status.UNAUTHENTICATED,
  );
  const fresh = await registerAt(r.a, r.caPem, 'east', revoked.token);
  for (const server of [r.a, r.b]) {
    await waitFor(
      async () => {
        const stream = openPush(mtlsClientOf(t, server, r.caPem, fresh));
        pushSnapshot(stream, 'east', 1, [service('web')]);
        const ack = await next(stream, (m) => m.ack ?? undefined).catch(() => undefined);
        stream.end();
        return ack?.accepted === true;
      },
      { timeoutMs: 15_000, message: `${server.name} to accept the certificate issued after the revocation` },
    );
  }
});

test('given a running agent, when its cluster is revoked and it is handed the new token, then it re-registers and pushes again', async (t) => {
  const r = await twoReplicas(t);
  const agent = await r.mesh.startAgent('east', { from: 'cluster-a', servers: [r.a] });
  const registrations = () =>
    agent.proc.lines.filter((l) => l.includes('registered; client certificate issued')).length;
  await waitFor(() => registrations() === 1 && agent.proc.lines.some((l) => l.includes('snapshot acked')), {
    timeoutMs: 30_000,
    message: 'the agent to register and push',
  });
  const revoked = await revoke(r.mesh, r.b, 'east');
  writeFileSync(tokenFile(r.mesh, 'east'), revoked.token);
  await agent.proc.waitForLine(/MESHRELAY_ERR_CERTIFICATE_REVOKED/, 30_000);
  await waitFor(() => registrations() === 2, {
    timeoutMs: 60_000,
    message: 'the agent to register again with the new token',
  });
  const reRegistered = agent.proc.lines.findLastIndex((l) => l.includes('registered; client certificate issued'));
  await waitFor(() => agent.proc.lines.slice(reRegistered).some((l) => l.includes('snapshot acked')), {
    timeoutMs: 30_000,
    message: 'the agent to push again with its new certificate',
  });
});

test('given a client certificate that lives 3 s, when its stream stays open, then the server closes it at expiry', async (t) => {
  const r = await twoReplicas(t, ['--client-cert-lifetime', '3']);
  const id = await registerAt(r.a, r.caPem, 'east', readFileSync(tokenFile(r.mesh, 'east'), 'utf8'));
  const stream = await connectedPush(t, r, r.a, id);
  const err = await streamError(stream, 30_000);
  assert.equal(err.code, status.UNAUTHENTICATED);
  assert.match(err.details, /certificate expired/);
});
