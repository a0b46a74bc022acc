import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import type { InputSnapshot } from '@meshrelay/api';
import { validateInputResource } from '@meshrelay/translator';
import { FileDiscoveryProvider } from '../src/discovery/file-provider.ts';
import { LeaderTermProvider } from '../src/leader/leader-term-provider.ts';
import { captureLogger, serviceYaml, tempDir } from './support/fixtures.ts';

test('given a provider restarted for a second term, when it reads the same manifests, then it publishes a new epoch from generation 1 to the same listeners', async (t) => {
  const dir = path.join(await tempDir(t), 'manifests');
  await mkdir(dir);
  await writeFile(path.join(dir, 'reviews.yaml'), serviceYaml('reviews'));
  const { logger } = captureLogger();
  const create = () =>
    new FileDiscoveryProvider({
      cluster: 'east',
      manifestsDir: dir,
      validate: validateInputResource,
      logger,
      rescanIntervalMs: 60_000,
      watch: false,
    });
  const provider = new LeaderTermProvider(create(), create);
  const seen: InputSnapshot[] = [];
  provider.onSnapshot((s) => seen.push(s));
  t.after(() => provider.stop());

  const current = (): InputSnapshot | undefined => provider.current;
  await provider.start();
  const first = current();
  await provider.stop();
  assert.equal(current(), undefined, 'a stopped provider holds no input');
  await provider.start();
  const second = current();

  assert.ok(first && second);
  assert.notEqual(second.epoch, first.epoch);
  assert.equal(second.generation, 1);
  assert.equal(second.hash, first.hash, 'same content, same hash');
  assert.deepEqual(
    seen.map((s) => s.epoch),
    [first.epoch, second.epoch],
  );
});
