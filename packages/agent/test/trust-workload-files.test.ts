import assert from 'node:assert/strict';
import { lstat, readdir, readlink, stat } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { WORKLOAD_FILES, WorkloadCertFiles } from '../src/trust/workload-cert-files.ts';
import { tempDir } from './support/fixtures.ts';

const TIMEOUT = { timeout: 60_000 };
const ID = { namespace: 'bookinfo', serviceAccount: 'reviews' };

test(
  'workload files: three names through ..data, switched whole; key 0600; old versions removed',
  TIMEOUT,
  async (t) => {
    const files = new WorkloadCertFiles(path.join(await tempDir(t), 'workload-certs'));
    assert.equal(await files.read(ID), undefined);
    await files.write(ID, { certificatePem: 'cert 1\n', privateKeyPem: 'key 1\n', caPem: 'ca 1\n' });
    assert.deepEqual(await files.read(ID), { certificatePem: 'cert 1\n', privateKeyPem: 'key 1\n', caPem: 'ca 1\n' });
    const dir = files.pathOf(ID);
    assert.equal(dir, path.join(files.dir, 'bookinfo', 'reviews'));
    for (const name of Object.values(WORKLOAD_FILES)) {
      assert.ok((await lstat(path.join(dir, name))).isSymbolicLink(), `${name} is a link`);
      assert.equal(await readlink(path.join(dir, name)), path.join('..data', name));
    }
    assert.equal((await stat(path.join(dir, WORKLOAD_FILES.privateKey))).mode & 0o777, 0o600);
    assert.equal((await stat(path.join(dir, WORKLOAD_FILES.certificate))).mode & 0o777, 0o644);

    await files.write(ID, { certificatePem: 'cert 2\n', privateKeyPem: 'key 2\n', caPem: 'ca 2\n' });
    assert.deepEqual(await files.read(ID), { certificatePem: 'cert 2\n', privateKeyPem: 'key 2\n', caPem: 'ca 2\n' });
    const versions = (await readdir(dir)).filter((n) => n.startsWith('..') && n !== '..data');
    assert.equal(versions.length, 1, `one version left, found ${versions.join(', ')}`);
    assert.deepEqual(await files.list(), [ID]);
    await files.remove(ID);
    assert.deepEqual(await files.list(), []);
  },
);

test('workload files: a name that is not a Kubernetes name is refused, nothing written', TIMEOUT, async (t) => {
  const files = new WorkloadCertFiles(path.join(await tempDir(t), 'workload-certs'));
  const content = { certificatePem: 'c', privateKeyPem: 'k', caPem: 'a' };
  await assert.rejects(files.write({ namespace: '..', serviceAccount: 'x' }, content), /namespace "\.\." is not/);
  await assert.rejects(
    files.write({ namespace: 'ok', serviceAccount: '../../etc' }, content),
    /service account "\.\.\/\.\.\/etc" is not/,
  );
  assert.deepEqual(await files.list(), []);
});
