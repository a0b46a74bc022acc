import assert from 'node:assert/strict';
import { watch } from 'node:fs';
import { mkdir, readFile, readdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { resourceEncoding, sha256Hex } from '@meshrelay/api';
import { spawnProcess } from '@meshrelay/testkit';
import { FileOutputWriter } from '../src/apply/output-writer.ts';
import { loopOutput } from './support/apply-loop.ts';
import { captureLogger, tempDir } from './support/fixtures.ts';

const APPLY_LOOP = fileURLToPath(new URL('./support/apply-loop.ts', import.meta.url));

/** Asserts that `current` serves one whole version: every resource file there, each holding its resource. */
async function assertWholeVersion(outputDir: string, hash: string): Promise<void> {
  const dir = await realpath(path.join(outputDir, 'current'));
  assert.equal(path.basename(dir), hash);
  const snapshot = JSON.parse(await readFile(path.join(dir, 'snapshot.json'), 'utf8')) as {
    hash: string;
    resources: Array<{ metadata: { name: string } }>;
  };
  assert.equal(snapshot.hash, hash);
  const files = (await readdir(dir)).filter((f) => f !== 'snapshot.json').sort();
  assert.equal(files.length, snapshot.resources.length);
  for (const resource of snapshot.resources) {
    const text = await readFile(path.join(dir, `ServiceEntry.imports.${resource.metadata.name}.yaml`), 'utf8');
    assert.deepEqual(parse(text), resource);
  }
}

/** Resolves when `name` appears in `dir` (created or renamed in); the watch is set before the writer runs. */
function appearing(dir: string, name: string): { seen: Promise<void>; close: () => void } {
  let close = (): void => undefined;
  const seen = new Promise<void>((resolve) => {
    const watcher = watch(dir, (_event, file) => {
      if (file === name) resolve();
    });
    close = () => watcher.close();
  });
  return { seen, close };
}

/**
 * Where round `round` kills the writer: as it starts output `target` (hash check, version build),
 * once that output's version directory is in place (before the state is saved), once the
 * changed resource's state file is in place (before the manifest names it), or once the
 * manifest is replaced (before stale state files are deleted; watched from the `applying` line on).
 */
async function killPoint(
  round: number,
  outputDir: string,
  stateDir: string,
  target: number,
): Promise<{ seen: Promise<void> | undefined; close: () => void }> {
  const output = loopOutput(target);
  if (round % 4 === 1) {
    await mkdir(path.join(outputDir, '.versions'), { recursive: true });
    return appearing(path.join(outputDir, '.versions'), output.hash);
  }
  if (round % 4 === 2) {
    await mkdir(path.join(stateDir, 'resources'), { recursive: true });
    const changed = output.resources.find((r) => r.metadata.name === `svc-${target % 300}`);
    return appearing(
      path.join(stateDir, 'resources'),
      `${sha256Hex(resourceEncoding(changed ?? output.resources[0]!))}.json`,
    );
  }
  return { seen: undefined, close: () => undefined };
}

test('given a writer process killed mid-apply at each step, when a new writer restores, then it serves the last or the in-flight output whole', async (t) => {
  const root = await tempDir(t);
  const outputDir = path.join(root, 'out');
  const stateDir = path.join(root, 'state');
  for (let round = 1; round <= 8; round++) {
    const first = round * 100;
    // Output first + round: by then the writer has applied `round` outputs of this run.
    const target = first + round;
    const point = await killPoint(round, outputDir, stateDir, target);
    t.after(point.close);
    const child = await spawnProcess({
      command: process.execPath,
      args: [APPLY_LOOP, outputDir, stateDir, String(first)],
      name: 'apply-loop',
    });
    t.after(() => child.kill());
    const line = await child.waitForLine(new RegExp(`^applying ${target} `), 60_000);
    const manifest = round % 4 === 3 ? appearing(stateDir, 'applied-output.json') : undefined;
    t.after(() => manifest?.close());
    await (point.seen ?? manifest?.seen ?? Promise.resolve());
    await child.kill();
    point.close();
    manifest?.close();
    const inFlight = line.split(' ')[2] as string;
    const applied = child.lines.filter((l) => l.startsWith('applied ')).map((l) => l.split(' ')[2] as string);
    const lastApplied = applied.at(-1) as string;

    const writer = new FileOutputWriter({ cluster: 'east', outputDir, stateDir, logger: captureLogger().logger });
    const restored = await writer.restore();
    assert.ok(restored, `round ${round}: the state loads`);
    assert.ok(
      [lastApplied, inFlight].includes(restored.hash),
      `round ${round}: restored ${restored.hash}, expected ${lastApplied} or ${inFlight}`,
    );
    await assertWholeVersion(outputDir, restored.hash);
  }
});

test("given a killed writer, when a new one applies an output after restoring, then the state holds exactly that output's resource files", async (t) => {
  const root = await tempDir(t);
  const outputDir = path.join(root, 'out');
  const stateDir = path.join(root, 'state');
  const child = await spawnProcess({
    command: process.execPath,
    args: [APPLY_LOOP, outputDir, stateDir, '0'],
    name: 'apply-loop',
  });
  t.after(() => child.kill());
  await child.waitForLine(/^applying 3 /, 60_000);
  await child.kill();
  const writer = new FileOutputWriter({ cluster: 'east', outputDir, stateDir, logger: captureLogger().logger });
  await writer.restore();
  const next = loopOutput(1000);
  assert.equal(await writer.apply(next), true);
  const files = (await readdir(path.join(stateDir, 'resources'))).sort();
  assert.equal(files.length, next.resources.length, 'no content file of an earlier output, nor a temp file, is left');
  assert.equal(new Set(files).size, files.length);
  await assertWholeVersion(outputDir, next.hash);
});
