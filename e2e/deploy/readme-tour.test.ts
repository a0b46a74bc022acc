// The README's five-minute tour, walked on real processes (a redis-server, a management server and
// two agents on the example clusters): the UI it shows, the checks it promises, the RouteTable edit
// it suggests and the break it invites. The README's screenshot is taken here too, by the headless
// Chromium the UI tests use, so it can always be taken again:
//   MESHRELAY_UPDATE_DOCS_SCREENSHOT=1 node --test e2e/deploy/readme-tour.test.ts
// rewrites docs/images/ui.png; without the switch the new picture goes to test-artifacts/docs/.
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { runMeshctl } from '@meshrelay/meshctl';
import { openBrowserPage, saveScreenshot, waitFor } from '@meshrelay/testkit';
import { Mesh, ROOT, type ServerProc } from '../mesh.ts';

const SCREENSHOT = 'docs/images/ui.png';
const CLUSTERS = ['cluster-a', 'cluster-b'] as const;
const UI_TIMEOUT_MS = 20_000;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
/** The tour's RouteTable, its edit and the output file it tells the reader to look at. */
const MANIFEST = 'examples/cluster-a/mesh-config.yaml';
const [FROM, TO] = ['version: v3', 'version: v2'];
const VIRTUAL_SERVICE = 'VirtualService.bookinfo.reviews-routes-rt.yaml';
const BREAK = 'bogusField: 1';

/** A PNG's size from its IHDR chunk, or an error saying why the bytes are not a PNG. */
function pngSize(bytes: Buffer, name: string): { width: number; height: number } {
  assert.ok(bytes.subarray(0, 8).equals(PNG_SIGNATURE), `${name} is not a PNG (no PNG signature)`);
  assert.equal(bytes.toString('latin1', 12, 16), 'IHDR', `${name} does not start with an IHDR chunk`);
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

/** meshctl against the tour's server with its admin token: exit code and everything it printed. */
async function meshctl(
  mesh: Mesh,
  server: ServerProc,
  args: readonly string[],
): Promise<{ code: number; out: string }> {
  let out = '';
  const io = {
    stdout: { write: (s: string) => ((out += s), true) },
    stderr: { write: (s: string) => ((out += s), true) },
    env: { MESHRELAY_ADMIN_TOKEN: mesh.adminToken() },
  };
  return { code: await runMeshctl(['--server', server.api, ...args], io), out };
}

/** The example clusters on real processes, each agent's output built from both clusters. */
async function startExamples(t: TestContext): Promise<{ mesh: Mesh; server: ServerProc }> {
  const mesh = await Mesh.start(t, { serverFlags: ['--workspaces-file', join(ROOT, 'examples/workspaces.yaml')] });
  const server = await mesh.startServer('mgmt-0');
  for (const cluster of CLUSTERS) {
    await mesh.register(cluster);
    await mesh.startAgent(cluster, { from: cluster });
  }
  for (const cluster of CLUSTERS) {
    await mesh.waitForOutput(
      cluster,
      (o) => o.provenance.length === CLUSTERS.length,
      60_000,
      `an output of ${cluster} built from both clusters`,
    );
  }
  return { mesh, server };
}

test('given the README, when it shows the UI, then the picture it embeds is a whole-page PNG in docs/images', () => {
  assert.ok(/!\[[^\]]+\]\(docs\/images\/ui\.png\)/.test(README), `the README embeds ${SCREENSHOT} as an image`);
  const { width, height } = pngSize(readFileSync(join(ROOT, SCREENSHOT)), SCREENSHOT);
  assert.equal(width, 1280, 'taken at the browser width the UI tests use');
  assert.ok(height >= 600, `a whole page, not a strip: ${height} px high`);
});

test(
  'given the example clusters on real processes, when the UI is opened and signed in to, then a screenshot shows both clusters warm and their resources',
  { timeout: 180_000 },
  async (t) => {
    const { mesh, server } = await startExamples(t);

    const page = await openBrowserPage(t, `${server.api}/?poll=250`, UI_TIMEOUT_MS);
    await page.locator('#admin-token').fill(mesh.adminToken());
    await page.getByRole('button', { name: 'Sign in' }).click();
    const rows = page.locator('#clusters tbody tr');
    await waitFor(
      async () => {
        const text = await rows.allInnerTexts();
        return (
          text.length === CLUSTERS.length &&
          text.every((row) => /cluster-[ab]/.test(row) && /\bwarm\b/.test(row) && !/not warm/.test(row))
        );
      },
      { timeoutMs: UI_TIMEOUT_MS, intervalMs: 200, message: 'the UI did not list both clusters as warm' },
    );
    await waitFor(async () => (await page.locator('#resources tbody tr').count()) > 0, {
      timeoutMs: UI_TIMEOUT_MS,
      intervalMs: 200,
      message: 'the UI listed no Gloo resources',
    });

    const taken = await saveScreenshot(page, 'docs', 'ui');
    assert.equal(pngSize(readFileSync(taken), taken).width, 1280);
    if (process.env['MESHRELAY_UPDATE_DOCS_SCREENSHOT'] === '1') copyFileSync(taken, join(ROOT, SCREENSHOT));
  },
);

test(
  "given the example clusters, when the README's tour checks them, edits the RouteTable and breaks it, then each step does what the README says",
  { timeout: 180_000 },
  async (t) => {
    for (const text of [MANIFEST, `\`${FROM}\` to \`${TO}\``, VIRTUAL_SERVICE, `\`${BREAK}\``, 'npx meshctl check']) {
      assert.ok(README.includes(text), `the tour names ${text}`);
    }
    assert.ok(
      readFileSync(join(ROOT, MANIFEST), 'utf8').includes(FROM),
      `${MANIFEST} has the ${FROM} the tour changes`,
    );
    const { mesh, server } = await startExamples(t);
    const agentA = mesh.agents.get('cluster-a');
    const agentB = mesh.agents.get('cluster-b');
    assert.ok(agentA && agentB);
    const manifest = join(agentA.manifestsDir, 'mesh-config.yaml');
    const virtualService = join(agentB.outputDir, 'current', VIRTUAL_SERVICE);
    const subset = () =>
      existsSync(virtualService) ? /subset: (\S+)/.exec(readFileSync(virtualService, 'utf8'))?.[1] : undefined;

    // Step 3: every check passes.
    await waitFor(async () => (await meshctl(mesh, server, ['check'])).code === 0, {
      timeoutMs: 30_000,
      intervalMs: 500,
      message: 'meshctl check did not pass',
    });
    assert.equal(subset(), 'version-v3');

    // Step 4: the edit lands in cluster-b's VirtualService.
    const original = readFileSync(manifest, 'utf8');
    writeFileSync(manifest, original.replace(FROM, TO));
    await waitFor(() => subset() === 'version-v2', {
      timeoutMs: 30_000,
      intervalMs: 100,
      message: `cluster-b's ${VIRTUAL_SERVICE} did not change to version-v2`,
    });

    // The break: check fails naming the resource and the field, the VirtualService is left out.
    const broken = original.replace(
      'spec:\n  hosts:\n    - reviews.global\n  http:',
      `spec:\n  ${BREAK}\n  hosts:\n    - reviews.global\n  http:`,
    );
    assert.notEqual(broken, original, `the RouteTable's spec in ${MANIFEST} is where the tour breaks it`);
    writeFileSync(manifest, broken);
    await waitFor(async () => (await meshctl(mesh, server, ['check'])).code === 1, {
      timeoutMs: 30_000,
      intervalMs: 500,
      message: 'meshctl check did not fail',
    });
    const { out } = await meshctl(mesh, server, ['check']);
    assert.match(out, /RouteTable bookinfo\/reviews-routes in cluster-a is INVALID: .*spec\.bogusField/);
    await waitFor(() => !existsSync(virtualService), {
      timeoutMs: 30_000,
      intervalMs: 100,
      message: `cluster-b kept ${VIRTUAL_SERVICE}`,
    });
    assert.ok(
      existsSync(join(agentB.outputDir, 'current', 'ServiceEntry.bookinfo.reviews-global-vd.yaml')),
      'other outputs keep flowing',
    );

    // Taken out again, the VirtualService comes back.
    writeFileSync(manifest, original);
    await waitFor(() => subset() === 'version-v3', {
      timeoutMs: 30_000,
      intervalMs: 100,
      message: `${VIRTUAL_SERVICE} did not come back`,
    });
  },
);
