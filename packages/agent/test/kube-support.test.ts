import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { STATUS_DIR } from '../src/status/file-status-writer.ts';
import { manifestObjects } from './support/kube.ts';

test(
  'given a manifests dir that also holds a status directory and other files, when the kube test helper reads it, then it takes the files the file provider reads',
  { timeout: 30_000 },
  async (t) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'meshrelay-kube-support-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    await writeFile(
      path.join(dir, 'reviews.yaml'),
      'apiVersion: v1\nkind: Service\nmetadata: {name: reviews, namespace: bookinfo}\n',
    );
    await mkdir(path.join(dir, 'team'));
    await writeFile(
      path.join(dir, 'team', 'ratings.json'),
      '{"apiVersion":"v1","kind":"Service","metadata":{"name":"ratings","namespace":"bookinfo"}}',
    );
    await mkdir(path.join(dir, STATUS_DIR));
    await writeFile(
      path.join(dir, STATUS_DIR, 'RouteTable.bookinfo.reviews.yaml'),
      'apiVersion: networking.gloo.solo.io/v2\nkind: RouteTable\nmetadata: {name: reviews}\n',
    );
    await writeFile(path.join(dir, 'NOTES.md'), '# not a manifest\n');

    const objects = await manifestObjects(dir);

    assert.deepEqual(
      objects.map((o) => `${o.kind}/${o.metadata.name}`),
      ['Service/reviews', 'Service/ratings'],
    );
  },
);
