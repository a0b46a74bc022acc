// The Topology view in headless Chromium against a real server with real mTLS
// relay clients: what it says while safe mode holds, and how much it draws of
// a mesh with many destinations. (e2e/topology-ui.test.ts drives it with real
// agents through a plane restart, a disconnect and a held output.)
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { Page } from 'playwright-core';
import type { Resource } from '@meshrelay/api';
import { buildEndpointSlice, openBrowserPage, saveScreenshot, waitFor } from '@meshrelay/testkit';
import {
  mtlsClient,
  next,
  openPush,
  pushSnapshot,
  register,
  registerCluster,
  service,
  startRestartedTestServer,
  startTestServer,
  virtualDestination,
  type TestServer,
} from './harness.ts';

const UI_TIMEOUT_MS = 10_000;
/** The relay clients here send no heartbeats: the server must not close their streams while a test looks. */
const PATIENT = ['--heartbeat-timeout', '60s'];

async function openSignedIn(t: TestContext, server: TestServer): Promise<Page> {
  const page = await openBrowserPage(t, `${server.api}/?poll=200`, UI_TIMEOUT_MS);
  await page.locator('#admin-token').fill(server.admin.token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  return page;
}

/** `count` Services with one endpoint each and a VirtualDestination for each. */
function manyDestinations(count: number): Resource[] {
  return Array.from({ length: count }, (_, i) => {
    const name = `svc-${String(i).padStart(2, '0')}`;
    return [
      service(name),
      buildEndpointSlice({
        service: name,
        namespace: 'default',
        ports: [{ name: 'http', port: 8080 }],
        endpoints: [{ ip: `10.1.0.${i + 1}` }],
      }),
      virtualDestination(name),
    ];
  }).flat();
}

test('given safe mode holding for a warm cluster without input, then the topology marks it as what translation waits for', async (t) => {
  const { server, tokens } = await startRestartedTestServer(
    t,
    [
      { name: 'east', warm: true },
      { name: 'west', warm: true },
    ],
    ['--safe-mode', 'true', ...PATIENT],
  );
  const stream = openPush(mtlsClient(t, server, await register(server, 'east', tokens.get('east') ?? '')));
  t.after(() => stream.end());
  pushSnapshot(stream, 'east', 1, [service('checkout'), virtualDestination('checkout')]);
  await next(stream, (m) => m.ack ?? undefined);
  server.loop.trigger('test');
  await waitFor(() => JSON.stringify(server.loop.status().gate.missing) === '["west"]', {
    message: 'the gate does not wait for west alone',
  });

  const page = await openSignedIn(t, server);
  const west = page.locator('#topology g[data-cluster="west"][data-side="export"]');
  await west.waitFor();
  assert.equal(await west.getAttribute('data-state'), 'bad');
  assert.match((await west.textContent()) ?? '', /safe mode waits for it/);
  assert.match(
    await page.locator('#topology-plane').innerText(),
    /Replica test-0: safe mode translation is halted, waiting for west\./,
  );
  assert.equal(
    await page.locator('#topology g[data-cluster="east"][data-side="export"]').getAttribute('data-state'),
    'ok',
  );
  assert.match(
    await page.locator('#topology-attention [data-cluster="west"][data-attention="holding"]').innerText(),
    /safe mode holds translation/,
  );
  // Nothing was translated while the gate holds: no output holds a destination yet.
  assert.match(
    (await page.locator('#topology svg.topology').textContent()) ?? '',
    /No output holds a VirtualDestination/,
  );
  await saveScreenshot(page, 'ui', 'topology-safe-mode');
});

test('given 45 VirtualDestinations, then the drawing shows 40 and says how many there are', async (t) => {
  const server = await startTestServer(t, PATIENT);
  const stream = openPush(mtlsClient(t, server, await registerCluster(server, 'east')));
  t.after(() => stream.end());
  pushSnapshot(stream, 'east', 1, manyDestinations(45));
  await next(stream, (m) => m.ack ?? undefined);

  const page = await openSignedIn(t, server);
  await page.locator('#topology-limit').waitFor();
  assert.match(await page.locator('#topology-limit').innerText(), /Drawing 40 of 45 VirtualDestinations/);
  assert.equal(await page.locator('#topology g[data-destination]').count(), 40);
  assert.equal(
    await page.locator('#topology g.topo-edge').count(),
    80,
    'east backs and receives each drawn destination',
  );
});
