import assert from 'node:assert/strict';
import { connect, createServer, type Socket } from 'node:net';
import { test, type TestContext } from 'node:test';
import { startFaultProxy, waitFor } from '../src/index.ts';

/** An echo server behind a fault proxy, and a client connected through the proxy that records what comes back. */
async function echoThroughProxy(t: TestContext) {
  const echo = createServer((socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', () => resolve()));
  const proxy = await startFaultProxy({ port: (echo.address() as { port: number }).port });
  const client: Socket = await new Promise((resolve) => {
    const socket = connect(proxy.port, '127.0.0.1', () => resolve(socket));
  });
  client.on('error', () => undefined);
  let received = '';
  client.on('data', (d: Buffer) => (received += d.toString()));
  t.after(async () => {
    client.destroy();
    await proxy.close();
    await new Promise((resolve) => echo.close(resolve));
  });
  return { proxy, client, received: () => received };
}

test('given a healthy proxy, when the client writes, then the bytes go through both ways and are counted', async (t) => {
  const { proxy, client, received } = await echoThroughProxy(t);
  client.write('ping');
  await waitFor(() => received() === 'ping');
  assert.ok(proxy.forwarded.up >= 1 && proxy.forwarded.down >= 1);
});

test('given a frozen proxy, when the client writes, then nothing comes back until it thaws', async (t) => {
  const { proxy, client, received } = await echoThroughProxy(t);
  await waitFor(() => proxy.connections === 1);
  proxy.freeze();
  client.write('held');
  client.write('back');
  const before = proxy.forwarded.up;
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(received(), '');
  assert.equal(proxy.forwarded.up, before);
  proxy.thaw();
  await waitFor(() => received() === 'heldback');
});

test('given a cut, when it happens, then the client connection closes', async (t) => {
  const { proxy, client } = await echoThroughProxy(t);
  await waitFor(() => proxy.connections === 1);
  proxy.cut();
  await waitFor(() => client.destroyed || client.readyState === 'closed');
});

test('given a proxy that is down, when a client connects, then the connection is closed at once', async (t) => {
  const { proxy } = await echoThroughProxy(t);
  proxy.setDown(true);
  const late = connect(proxy.port, '127.0.0.1');
  late.on('error', () => undefined);
  t.after(() => late.destroy());
  await new Promise((resolve) => late.once('close', resolve));
  assert.equal(proxy.connections, 1, 'only the first connection is open');
});
