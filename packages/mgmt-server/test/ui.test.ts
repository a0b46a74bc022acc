// The web UI in a real browser (headless Chromium) against a real management
// server: banners appear and go away as the server's state changes, without a
// reload. Screenshots land in test-artifacts/ui/ for a human look.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import type { Page } from 'playwright-core';
import { openBrowserPage, saveScreenshot, statusFixture, waitFor } from '@meshrelay/testkit';
import {
  apiGet,
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

/** Opens `path` of the server's UI and signs in with its admin token, as an operator would. */
async function openPage(t: TestContext, server: TestServer, path = '/?poll=200'): Promise<Page> {
  const page = await openBrowserPage(t, `${server.api}${path}`, UI_TIMEOUT_MS);
  await signIn(page, server.admin.token);
  return page;
}

async function signIn(page: Page, token: string): Promise<void> {
  await page.locator('#admin-token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

async function screenshot(page: Page, name: string): Promise<void> {
  await saveScreenshot(page, 'ui', name);
}

/**
 * Pushes one input snapshot for a cluster through a real mTLS relay client (registering it first without a token);
 * returns the input hash.
 */
async function pushInput(t: TestContext, server: TestServer, name: string, token?: string): Promise<string> {
  const identity = await register(server, name, token ?? (await server.registry.register(name, {})).token);
  const stream = openPush(mtlsClient(t, server, identity));
  t.after(() => stream.end());
  const hash = pushSnapshot(stream, name, 1, [service('checkout'), virtualDestination('checkout')]);
  await next(stream, (m) => m.ack ?? undefined);
  return hash;
}

test('given the UI files, when requested, then / and /ui/* are served with their content types and unknown assets are 404', async (t) => {
  const server = await startTestServer(t);
  const index = await fetch(`${server.api}/`);
  assert.equal(index.status, 200);
  assert.equal(index.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.match(await index.text(), /id="safe-mode-banner"/);
  assert.match(index.headers.get('content-security-policy') ?? '', /default-src 'self'/);
  assert.equal(index.headers.get('x-content-type-options'), 'nosniff');
  const js = await fetch(`${server.api}/ui/app.js`);
  assert.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
  const css = await fetch(`${server.api}/ui/style.css`);
  assert.equal(css.headers.get('content-type'), 'text/css; charset=utf-8');
  const missing = await fetch(`${server.api}/ui/nope.js`);
  assert.equal(missing.status, 404);
  assert.equal(((await missing.json()) as { code: string }).code, 'MESHRELAY_ERR_NOT_FOUND');
});

test('given safe mode holding for a warm cluster without input, then the banner names it with its ways out, and disappears once it is set to skip warming', async (t) => {
  // The gate holds on a replica's start, so both clusters are warm in the durable registry before the server starts.
  const { server, tokens } = await startRestartedTestServer(
    t,
    [
      { name: 'east', warm: true },
      { name: 'west', warm: true },
    ],
    ['--safe-mode', 'true'],
  );
  await pushInput(t, server, 'east', tokens.get('east'));
  server.loop.trigger('test');
  await waitFor(() => JSON.stringify(server.loop.status().gate.missing) === '["west"]', {
    message: 'the gate does not wait for west alone',
  });
  const page = await openPage(t, server);

  const banner = page.locator('#safe-mode-banner');
  await banner.locator('[data-cluster="west"]').waitFor();
  assert.equal(await banner.getAttribute('role'), 'alert');
  assert.equal(await banner.locator('[data-cluster="east"]').count(), 0);
  const text = await banner.innerText();
  assert.doesNotMatch(text, /\beast\b/);
  assert.match(text, /Safe mode: translation is halted/);
  assert.match(text, /Halted since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\d+ s ago\)/);
  assert.match(text, /Reconnect the agent of west/);
  assert.match(text, /meshctl cluster deregister west/);
  assert.match(text, /meshctl cluster update west --skip-warming/);
  await page.locator('#clusters tr[data-cluster="west"]', { hasText: 'holding translation' }).waitFor();
  await screenshot(page, 'safe-mode-banner');

  await server.registry.update('west', { skipWarming: true });
  await banner.waitFor({ state: 'hidden' });
  await page.locator('#clusters tr[data-cluster="west"] td', { hasText: 'yes' }).waitFor();
  await screenshot(page, 'safe-mode-released');
});

test('given a safe-start window holding for a warm cluster, then the banner counts down to the end of the window, live', async (t) => {
  const { server } = await startRestartedTestServer(t, [{ name: 'west', warm: true }], ['--safe-start-window', '300']);
  await waitFor(() => server.loop.status().windowEndsAt !== undefined, {
    message: 'the safe-start window does not hold',
  });
  const page = await openPage(t, server);

  const banner = page.locator('#safe-mode-banner');
  await banner.locator('[data-cluster="west"]').waitFor();
  const text = await banner.innerText();
  assert.match(text, /Safe-start window: translation is waiting/);
  assert.match(
    text,
    /The window ends at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(in [45]:\d\d\); translation then runs without the missing clusters/,
  );
  const countdown = banner.locator('#window-countdown');
  const first = await countdown.innerText();
  await waitFor(async () => (await countdown.innerText()) !== first, { message: `the countdown stays at ${first}` });
  await screenshot(page, 'safe-start-window-banner');

  // An operator selecting a command to copy keeps the selection across polls.
  const skipWarming = 'meshctl cluster update west --skip-warming';
  await banner.locator('code', { hasText: skipWarming }).click();
  assert.equal(await page.evaluate('String(getSelection())'), skipWarming);
  for (let polls = 0; polls < 3; polls++) await page.waitForResponse((res) => res.url().endsWith('/api/v1/safe-mode'));
  assert.equal(await page.evaluate('String(getSelection())'), skipWarming);
});

test('given an output held by the blast-radius guard, then the held-outputs banner names the cluster and its release command until it is released', async (t) => {
  const server = await startTestServer(t);
  await server.registry.register('east', {});
  const page = await openPage(t, server);
  const banner = page.locator('#held-outputs-banner');
  await page.locator('#clusters tr[data-cluster="east"]').waitFor();
  assert.equal(await banner.isHidden(), true);

  server.held.hold(
    {
      cluster: 'east',
      hash: 'a'.repeat(64),
      reason: 'delete-share',
      message: 'would delete 8 of 10 resources (80 % > 50 %)',
      deleted: 8,
      held: 10,
      missingClusters: [],
    },
    new Date(),
  );
  const entry = banner.locator('[data-cluster="east"]');
  await entry.waitFor();
  const text = await entry.innerText();
  assert.match(text, /would delete 8 of 10 resources \(80 % > 50 %\)/);
  assert.match(text, /meshctl output release east/);
  assert.match(text, /aaaaaaaaaaaa/);
  await screenshot(page, 'held-outputs-banner');

  server.held.release('east');
  await banner.waitFor({ state: 'hidden' });
});

test('given two clusters, then the table shows each with its warm state, and clicking one opens its snapshots with provenance', async (t) => {
  const server = await startTestServer(t);
  const inputHash = await pushInput(t, server, 'east');
  await server.registry.register('west', {});
  server.loop.trigger('test');
  await waitFor(() => server.outputs.current('east') !== undefined, { message: 'no output for east' });
  const page = await openPage(t, server);

  const east = page.locator('#clusters tr[data-cluster="east"]');
  const west = page.locator('#clusters tr[data-cluster="west"]');
  await east.locator('td', { hasText: 'FirstSnapshotReceived' }).waitFor();
  assert.match(await east.innerText(), /warm/);
  assert.match(await east.innerText(), new RegExp(inputHash.slice(0, 12)));
  assert.match(await west.innerText(), /not warm\s+ClusterRegistered/);
  assert.match(await west.innerText(), /never connected/);
  assert.equal(await page.locator('#clusters tbody tr').count(), 2);

  await east.locator('td').first().click();
  const view = page.locator('#snapshot-view');
  const provenance = view.locator('[data-provenance-cluster="east"]');
  await provenance.waitFor();
  assert.match(await provenance.innerText(), new RegExp(`${inputHash.slice(0, 12)}\\s+current input`));
  assert.match(await view.innerText(), new RegExp(`Hash\\s+${inputHash}`));
  await view.locator('summary').first().click();
  await view.locator('.resources td', { hasText: 'default/checkout' }).first().waitFor();
  await screenshot(page, 'snapshot-view');

  await view.getByRole('button', { name: 'Close' }).click();
  await view.waitFor({ state: 'hidden' });
});

test('given the API stops answering, then the page says the server is unreachable, keeps the last state, and recovers', async (t) => {
  const server = await startTestServer(t);
  await server.registry.register('east', {});
  const page = await openPage(t, server);
  await page.locator('#clusters tr[data-cluster="east"]').waitFor();

  await page.route('**/api/v1/**', (route) => route.abort('connectionrefused'));
  const notice = page.locator('#server-unreachable');
  await notice.waitFor();
  assert.match(await notice.innerText(), /Server unreachable/);
  assert.match(await page.locator('#poll-state').innerText(), /server unreachable/);
  assert.equal(await page.locator('#clusters tr[data-cluster="east"]').count(), 1);
  await screenshot(page, 'server-unreachable');

  await page.unroute('**/api/v1/**');
  await notice.waitFor({ state: 'hidden' });
});

test('given no admin token in the tab, when the page opens, then it asks for the token and shows no data', async (t) => {
  const server = await startTestServer(t);
  await server.registry.register('east', {});
  const apiCalls: string[] = [];
  const page = await openBrowserPage(t, 'about:blank', UI_TIMEOUT_MS);
  page.on('request', (req) => {
    if (new URL(req.url()).pathname.startsWith('/api/')) apiCalls.push(req.url());
  });
  await page.goto(`${server.api}/?poll=200`, { waitUntil: 'networkidle' });
  const form = page.locator('#sign-in');
  await form.waitFor();
  assert.match(await form.innerText(), /admin-token/);
  assert.equal(await page.locator('#data').isHidden(), true);
  assert.equal(await page.locator('#clusters tbody tr').count(), 0);
  assert.equal(await page.locator('#poll-state').innerText(), 'signed out');
  assert.deepEqual(apiCalls, []);
  await screenshot(page, 'sign-in');
});

test('given the admin token entered once, then the page shows the held-output banner, updates live and stays signed in across a reload', async (t) => {
  const server = await startTestServer(t);
  await server.registry.register('east', {});
  server.held.hold(
    {
      cluster: 'east',
      hash: 'b'.repeat(64),
      reason: 'delete-share',
      message: 'would delete 9 of 10 resources (90 % > 50 %)',
      deleted: 9,
      held: 10,
      missingClusters: [],
    },
    new Date(),
  );
  const page = await openBrowserPage(t, `${server.api}/?poll=200`, UI_TIMEOUT_MS);
  await signIn(page, server.admin.token);

  await page.locator('#held-outputs-banner [data-cluster="east"]').waitFor();
  assert.equal(await page.locator('#sign-in').isHidden(), true);
  await server.registry.register('west', {});
  await page.locator('#clusters tr[data-cluster="west"]').waitFor();
  const stored = await page.evaluate('sessionStorage.getItem("meshrelay.adminToken")');
  assert.equal(stored, server.admin.token);
  assert.deepEqual(await page.context().cookies(), [], 'the token must never be a cookie');

  await page.reload();
  await page.locator('#clusters tr[data-cluster="west"]').waitFor();
  assert.equal(await page.locator('#sign-in').isHidden(), true);

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.locator('#sign-in').waitFor();
  assert.equal(await page.locator('#data').isHidden(), true);
  assert.equal(await page.evaluate('sessionStorage.getItem("meshrelay.adminToken")'), null);
});

test('given a wrong admin token, when entered, then the server refuses it and the page asks again without showing data', async (t) => {
  const server = await startTestServer(t);
  await server.registry.register('east', {});
  const page = await openBrowserPage(t, `${server.api}/?poll=200`, UI_TIMEOUT_MS);
  await signIn(page, 'not-the-admin-token-at-all');
  const message = page.locator('#sign-in-message', { hasText: 'The server refused this token' });
  await message.waitFor();
  assert.equal(await page.locator('#data').isHidden(), true);
  assert.equal(await page.evaluate('sessionStorage.getItem("meshrelay.adminToken")'), null);
  await signIn(page, server.admin.token);
  await page.locator('#clusters tr[data-cluster="east"]').waitFor();
  assert.equal((await apiGet<{ clusters: unknown[] }>(server, '/api/v1/clusters')).clusters.length, 1);
});

test('given the Resources view open, when a config with a good RouteTable and an INVALID AccessPolicy arrives, then the view shows the INVALID one with its message and the ACCEPTED one with its outputs, live', async (t) => {
  const server = await startTestServer(t);
  const page = await openPage(t, server);
  await page.locator('#resources-empty').waitFor();

  const stream = openPush(mtlsClient(t, server, await registerCluster(server, 'cluster-a')));
  t.after(() => stream.end());
  pushSnapshot(stream, 'cluster-a', 1, statusFixture());
  await next(stream, (m) => m.ack ?? undefined);

  const policy = page.locator('#resources tr[data-resource="AccessPolicy/bookinfo/reviews-lockdown@cluster-a"]');
  await policy.waitFor();
  const policyCells = await policy.locator('th, td').allInnerTexts();
  assert.deepEqual(policyCells.slice(0, 5), ['AccessPolicy', 'reviews-lockdown', 'bookinfo', 'cluster-a', 'INVALID']);
  assert.match(policyCells[5] ?? '', /spec\.config\.enforcementLayers/);
  const route = page.locator('#resources tr[data-resource="RouteTable/bookinfo/reviews-route@cluster-a"]');
  const routeCells = await route.locator('th, td').allInnerTexts();
  assert.equal(routeCells[4], 'ACCEPTED');
  assert.match(routeCells[6] ?? '', /^VirtualService bookinfo\/\S+ → cluster-a$/);
  assert.match(await page.locator('#resources-title').innerText(), /Resources \(2\)\s+1 not applied as written/);
  await screenshot(page, 'resources-view');
});

test('given no --workspaces-file, then a notice names the implicit global workspace and what it allows; with Workspaces defined there is none', async (t) => {
  const implicit = await startTestServer(t);
  const page = await openPage(t, implicit);
  const banner = page.locator('#workspaces-banner');
  await banner.waitFor({ state: 'visible', timeout: UI_TIMEOUT_MS });
  assert.equal(await banner.getAttribute('role'), 'status');
  const text = await banner.innerText();
  assert.match(text, /Implicit global workspace: no Workspace is defined/);
  assert.match(
    text,
    /any cluster can define routes for any host, including other clusters' \*\.cluster\.local Services, and AccessPolicies every cluster applies/,
  );
  assert.match(text, /--workspaces-file FILE/);
  await screenshot(page, 'implicit-global-workspace');

  const dir = mkdtempSync(join(tmpdir(), 'meshrelay-ui-workspaces-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'workspaces.yaml');
  writeFileSync(
    file,
    'apiVersion: admin.gloo.solo.io/v2\nkind: Workspace\nmetadata: { name: team-a, namespace: gloo-mesh }\nspec:\n  workloadClusters: [{ name: east }]\n',
  );
  const defined = await startTestServer(t, ['--workspaces-file', file]);
  const scoped = await openPage(t, defined);
  await scoped.locator('#replica').filter({ hasText: 'test-0' }).waitFor({ timeout: UI_TIMEOUT_MS });
  await waitFor(
    async () =>
      (await apiGet<{ workspaces: { mode: string } }>(defined, '/api/v1/status')).workspaces.mode === 'defined',
    { message: 'the status to name the defined workspaces' },
  );
  assert.equal(await scoped.locator('#workspaces-banner').isVisible(), false);
});
