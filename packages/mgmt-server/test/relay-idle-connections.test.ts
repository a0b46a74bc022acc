// Connections that carry no call are closed, so abandoned ones cannot fill the per-peer
// connection cap (--max-connections-per-peer) during a reconnect storm; sessions stay.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectivityState } from '@grpc/grpc-js';
import { waitFor } from '@meshrelay/testkit';
import { IDLE_CONNECTION_MS } from '../src/relay/relay-server.ts';
import { mtlsClient, next, openPush, pushSnapshot, registerCluster, service, startTestServer } from './harness.ts';

test('given one connection with no call and one carrying a push session, when the idle time passes, then the server closes only the idle one', async (t) => {
  const server = await startTestServer(t);
  const idle = mtlsClient(t, server, await registerCluster(server, 'idle'));
  await new Promise<void>((resolve, reject) =>
    idle.waitForReady(Date.now() + 5000, (err) => (err ? reject(err) : resolve())),
  );
  const busy = mtlsClient(t, server, await registerCluster(server, 'busy'));
  const push = openPush(busy);
  t.after(() => push.cancel());
  pushSnapshot(push, 'busy', 1, [service('s')]);
  assert.equal((await next(push, (m) => m.ack ?? undefined)).accepted, true);
  // The session stays alive as an agent's does: heartbeats within the server's timeout.
  const beats = setInterval(() => push.write({ heartbeat: { sentUnixMs: Date.now() } }), 200);
  t.after(() => clearInterval(beats));
  const startedAt = Date.now();

  await waitFor(() => idle.getChannel().getConnectivityState(false) !== connectivityState.READY, {
    timeoutMs: IDLE_CONNECTION_MS * 3,
    intervalMs: 100,
    message: 'the idle connection stayed open',
  });
  assert.ok(Date.now() - startedAt >= IDLE_CONNECTION_MS / 2, 'not closed before it was idle');
  assert.equal(
    busy.getChannel().getConnectivityState(false),
    connectivityState.READY,
    'the session kept its connection',
  );
  assert.equal(
    server.connections.streams('busy').some((s) => s.kind === 'push'),
    true,
  );
});
