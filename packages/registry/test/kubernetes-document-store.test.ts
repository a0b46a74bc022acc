// The ConfigMap backend of shared documents against the fake kube-apiserver (a test double from
// @meshrelay/testkit), which refuses ConfigMaps over 1 MiB as kube-apiserver does.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { FAKE_KUBE_MAX_DATA_BYTES, waitFor } from '@meshrelay/testkit';
import { KubernetesDocumentStore, SHARED_STATE_LABEL } from '../src/kubernetes-document-store.ts';
import { registryApis } from '../src/kubernetes-objects.ts';
import { NS, kubeConfigOf, startFakeKube } from './kube-harness.ts';

function sharedObjects(fake: Awaited<ReturnType<typeof startFakeKube>>): Array<Record<string, unknown>> {
  return fake.objects('ConfigMap', NS).filter((cm) => cm.metadata.labels?.[SHARED_STATE_LABEL] === 'contributions');
}

test('given a 3 MiB incompressible document, when put and read by another store, then it comes back whole from objects under the 1 MiB limit', async (t) => {
  const fake = await startFakeKube(t);
  const writer = new KubernetesDocumentStore(registryApis(kubeConfigOf(fake)), NS, 'contributions');
  const reader = new KubernetesDocumentStore(registryApis(kubeConfigOf(fake)), NS, 'contributions');
  const body = randomBytes(3 * 1024 * 1024);
  await writer.put('east', body);
  assert.deepEqual(await reader.get('east'), body);
  const objects = sharedObjects(fake);
  assert.ok(objects.length >= 5, `an index and at least four chunks, got ${objects.length}`);
  for (const cm of objects) assert.ok(JSON.stringify(cm).length < FAKE_KUBE_MAX_DATA_BYTES * 1.4);
  assert.deepEqual(
    (await reader.list()).map((d) => d.name),
    ['east'],
  );
});

test('given a large document rewritten, when the new generation is in place, then the old chunks are gone and delete removes the rest', async (t) => {
  const fake = await startFakeKube(t);
  const store = new KubernetesDocumentStore(registryApis(kubeConfigOf(fake)), NS, 'contributions');
  await store.put('east', randomBytes(2 * 1024 * 1024));
  const before = sharedObjects(fake).length;
  const second = randomBytes(2 * 1024 * 1024);
  await store.put('east', second);
  assert.equal(sharedObjects(fake).length, before, 'one generation of chunks is kept');
  assert.deepEqual(await store.get('east'), second);
  await store.delete('east');
  assert.deepEqual(sharedObjects(fake), []);
  assert.equal(await store.get('east'), undefined);
});

test('given a reader running while a writer replaces a large document, when it reads, then it always gets one whole version', async (t) => {
  const fake = await startFakeKube(t);
  const writer = new KubernetesDocumentStore(registryApis(kubeConfigOf(fake)), NS, 'contributions');
  const reader = new KubernetesDocumentStore(registryApis(kubeConfigOf(fake)), NS, 'contributions');
  const versions = [0, 1, 2, 3].map((v) =>
    Buffer.alloc(2 * 1024 * 1024, v).fill(randomBytes(900 * 1024), 0, 900 * 1024),
  );
  await writer.put('east', versions[0]!);
  let writing = true;
  const writes = (async () => {
    for (const v of versions.slice(1)) await writer.put('east', v);
    writing = false;
  })();
  let reads = 0;
  while (writing) {
    const got = await reader.get('east');
    assert.ok(
      versions.some((v) => got?.equals(v)),
      'a read returned a mix of versions',
    );
    reads++;
  }
  await writes;
  assert.ok(reads > 0);
  assert.deepEqual(await reader.get('east'), versions[3]);
});

test('given two writers of one document, when both put, then the last write wins for every reader', async (t) => {
  const fake = await startFakeKube(t);
  const [a, b] = [0, 1].map(() => new KubernetesDocumentStore(registryApis(kubeConfigOf(fake)), NS, 'stream-claims'));
  await a!.put('east.push', Buffer.from('a'));
  await b!.put('east.push', Buffer.from('b'));
  assert.equal((await a!.get('east.push'))?.toString(), 'b');
  await assert.rejects(
    a!.put('East..push', Buffer.from('x')),
    (err: { code?: string }) => err.code === 'MESHRELAY_ERR_INVALID_ARGUMENT',
  );
});

test("given a watch on one replica's store, when another replica writes and deletes documents, then the watch reports each changed name", async (t) => {
  const fake = await startFakeKube(t);
  const [watched, other] = [0, 1].map(
    () => new KubernetesDocumentStore(registryApis(kubeConfigOf(fake)), NS, 'held-outputs'),
  );
  await other!.put('east', Buffer.from('1'));
  const reported: string[][] = [];
  const stop = watched!.watch(
    (names) => reported.push(names),
    20,
    (err) => assert.fail(String(err)),
  );
  t.after(stop);
  await waitFor(() => reported.length === 1, { timeoutMs: 5000, message: 'the first look reported nothing' });
  assert.deepEqual(reported[0], ['east']);
  await other!.put('west.release', Buffer.from('2'));
  await other!.delete('east');
  await waitFor(() => reported.flat().includes('west.release') && reported.slice(1).flat().includes('east'), {
    timeoutMs: 5000,
    message: `reported: ${JSON.stringify(reported)}`,
  });
});
