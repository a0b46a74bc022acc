import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { writeResultsSection } from '../results-file.ts';

async function tempFile(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'results-file-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'RESULTS.md');
}

test('given a results file written before sections existed, when a tier section is written, then the old text becomes the in-process section, first', async (t) => {
  const path = await tempFile(t);
  await writeFile(path, '# Meshrelay benchmark results\n\nold figures\n');
  writeResultsSection(path, 'tier-M', '# tier M\n\nnew figures');
  assert.equal(
    await readFile(path, 'utf8'),
    '<!-- bench-section:in-process -->\n# Meshrelay benchmark results\n\nold figures\n<!-- /bench-section:in-process -->\n\n<!-- bench-section:tier-M -->\n# tier M\n\nnew figures\n<!-- /bench-section:tier-M -->\n',
  );
});

test('given several sections, when one is written again, then only that one changes and the order stays in-process, S, M, L', async (t) => {
  const path = await tempFile(t);
  writeResultsSection(path, 'tier-L', 'L1');
  writeResultsSection(path, 'tier-S', 'S1');
  writeResultsSection(path, 'in-process', 'P1');
  writeResultsSection(path, 'tier-S', 'S2');
  const text = await readFile(path, 'utf8');
  assert.deepEqual(
    [...text.matchAll(/<!-- bench-section:([\w-]+) -->\n(.*)\n/g)].map((m) => `${m[1]}=${m[2]}`),
    ['in-process=P1', 'tier-S=S2', 'tier-L=L1'],
  );
});
