// Headless Chromium (Debian's package) driven by playwright-core, for tests
// that look at the web UI the way an operator would.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TestContext } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';
/** Where screenshots go (gitignored): <repo>/test-artifacts/<group>/. */
export const ARTIFACTS_ROOT = resolve(import.meta.dirname, '..', '..', '..', 'test-artifacts');

/**
 * Opens `url` in a fresh headless Chromium profile; everything is closed in
 * t.after. Page errors and console errors (other than the browser's own
 * "Failed to load resource" lines) fail the test.
 */
export async function openBrowserPage(t: TestContext, url: string, timeoutMs = 10_000): Promise<Page> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`browser tests need Chromium at ${CHROMIUM_PATH}; install it with "apt-get install -y chromium"`);
  }
  const profile = mkdtempSync(join(tmpdir(), 'meshrelay-chromium-'));
  let context: BrowserContext | undefined;
  t.after(async () => {
    await context?.close();
    rmSync(profile, { recursive: true, force: true });
  });
  // A persistent context is how Playwright takes a user data dir: a fresh profile per test.
  // Loaded here, not at the top: most test files import the testkit and never open a browser.
  const { chromium } = await import('playwright-core');
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 860 },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(timeoutMs);
  const pageErrors: string[] = [];
  page.on('pageerror', (err) => pageErrors.push(err.message));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) pageErrors.push(msg.text());
  });
  t.after(() => assert.deepEqual(pageErrors, [], 'the page reported errors'));
  await page.goto(url);
  return page;
}

export async function saveScreenshot(page: Page, group: string, name: string): Promise<string> {
  const dir = join(ARTIFACTS_ROOT, group);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
