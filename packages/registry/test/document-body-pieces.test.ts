// Shared documents written from a body in pieces (what kept contributions write): both backends.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DirectoryDocumentStore } from '../src/directory-document-store.ts';
import { KubernetesDocumentStore } from '../src/kubernetes-document-store.ts';
import { registryApis } from '../src/kubernetes-objects.ts';
import { NS, kubeConfigOf, startFakeKube } from './kube-harness.ts';

async function* pieces(parts: readonly string[], failAfter?: number): AsyncGenerator<string> {
  for (const [i, part] of parts.entries()) {
    if (i === failAfter) throw new Error('the maker of the body failed');
    await new Promise<void>((resolve) => setImmediate(resolve));
    yield part;
  }
}

const PARTS = ['{"cluster":"east",', '"resources":[{"city":"zürich"},', '{"a":1},'.repeat(50_000), '{"a":2}]}'];

test('given a directory store, when a document is put in pieces, then it reads back as their concatenation', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'meshrelay-pieces-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const store = new DirectoryDocumentStore(dir);
  await store.put('east', pieces(PARTS));
  assert.equal(String(await store.get('east')), PARTS.join(''));
});

test('given a directory store holding a document, when a put in pieces fails part way, then the previous document stays whole and no partial file is left', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'meshrelay-pieces-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const store = new DirectoryDocumentStore(dir);
  await store.put('east', Buffer.from('{"previous":true}'));
  await assert.rejects(store.put('east', pieces(PARTS, 2)), /the maker of the body failed/);
  assert.equal(String(await store.get('east')), '{"previous":true}');
  assert.ok(
    readdirSync(dir).every((f) => !f.endsWith('.tmp')),
    `files: ${readdirSync(dir).join(', ')}`,
  );
});

test('given a kubernetes store, when a document is put in pieces, then another store reads back their concatenation', async (t) => {
  const fake = await startFakeKube(t);
  const writer = new KubernetesDocumentStore(registryApis(kubeConfigOf(fake)), NS, 'contributions');
  const reader = new KubernetesDocumentStore(registryApis(kubeConfigOf(fake)), NS, 'contributions');
  await writer.put('east', pieces(PARTS));
  assert.equal(String(await reader.get('east')), PARTS.join(''));
});
