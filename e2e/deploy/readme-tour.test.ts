// The README shows the web UI as a picture. That picture is taken here, by the same headless
// Chromium the UI tests use, of the real UI serving the example clusters (a real redis-server,
// a management server and two agents on examples/), so it can always be taken again:
//   MESHRELAY_UPDATE_DOCS_SCREENSHOT=1 node --test e2e/deploy/ui-screenshot.test.ts
// rewrites docs/images/ui.png; without the switch the new picture goes to test-artifacts/docs/.
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { openBrowserPage, saveScreenshot, waitFor } from '@meshrelay/testkit';
import { Mesh, ROOT } from '../mesh.ts';

const SCREENSHOT = 'docs/images/ui.png';
const CLUSTERS = ['cluster-a', 'cluster-b'] as const;
const UI_TIMEOUT_MS = 20_000;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** A PNG's size from its IHDR chunk, or an error saying why the bytes are not a PNG. */
function pngSize(bytes: Buffer, name: string): { width: number; height: number } {
  assert.ok(bytes.subarray(0, 8).equals(PNG_SIGNATURE), `${name} is not a PNG (no PNG signature)`);
  assert.equal(bytes.toString('latin1', 12, 16), 'IHDR', `${name} does not start with an IHDR chunk`);
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

test('given the README, when it shows the UI, then the picture it embeds is a whole-page PNG in docs/images', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  assert.ok(readme.includes(`](${SCREENSHOT})`) && /!\[[^\]]+\]\(docs\/images\/ui\.png\)/.test(readme), `the README embeds ${SCREENSHOT} as an image`);
  const { width, height } = pngSize(readFileSync(join(ROOT, SCREENSHOT)), SCREENSHOT);
  assert.equal(width, 1280, 'taken at the browser width the UI tests use');
  assert.ok(height >= 600, `a whole page, not a strip: ${height} px high`);
});

test('given the example clusters on real processes, when the UI is opened and signed in to, then a screenshot shows both clusters warm and their resources', { timeout: 180_000 }, async (t) => {
  const mesh = await Mesh.start(t, { serverFlags: ['--workspaces-file', join(ROOT, 'examples/workspaces.yaml')] });
  const server = await mesh.startServer('mgmt-0');
  for (const cluster of CLUSTERS) {
    await mesh.register(cluster);
    await mesh.startAgent(cluster, { from: cluster });
  }
  for (const cluster of CLUSTERS) {
    await mesh.waitForOutput(cluster, (o) => o.provenance.length === CLUSTERS.length, 60_000, `an output of ${cluster} built from both clusters`);
  }

  const page = await openBrowserPage(t, `${server.api}/?poll=250`, UI_TIMEOUT_MS);
  await page.locator('#admin-token').fill(mesh.adminToken());
  await page.getByRole('button', { name: 'Sign in' }).click();
  const rows = page.locator('#clusters tbody tr');
  await waitFor(async () => {
    const text = await rows.allInnerTexts();
    return text.length === CLUSTERS.length && text.every((row) => /cluster-[ab]/.test(row) && /\bTrue\b|\bwarm\b/i.test(row));
  }, { timeoutMs: UI_TIMEOUT_MS, intervalMs: 200, message: 'the UI did not list both clusters as warm' });
  await waitFor(async () => (await page.locator('#resources tbody tr').count()) > 0, {
    timeoutMs: UI_TIMEOUT_MS, intervalMs: 200, message: 'the UI listed no Gloo resources',
  });

  const taken = await saveScreenshot(page, 'docs', 'ui');
  const { width } = pngSize(readFileSync(taken), taken);
  assert.equal(width, 1280);
  if (process.env['MESHRELAY_UPDATE_DOCS_SCREENSHOT'] === '1') copyFileSync(taken, join(ROOT, SCREENSHOT));
});
