// An agent sends its input in canonical JSON; the server keeps each resource's received text as
// its encoding instead of copying and encoding it again, and checks the text is canonical first.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  buildInputSnapshot,
  canonicalEncodingCount,
  canonicalJson,
  encodeSnapshotFramesSync,
  sha256Hex,
  snapshotEncoding,
  type Resource,
} from '@meshrelay/api';
import { mtlsClient, next, openPush, registerCluster, service, startTestServer, type PushStream } from './harness.ts';

const resources = (): Resource[] => Array.from({ length: 100 }, (_, i) => service(`s${String(i).padStart(3, '0')}`));

function pushText(stream: PushStream, hash: string, text: string): void {
  const frames = encodeSnapshotFramesSync({ epoch: 'e1', generation: 1, hash, encoding: text });
  stream.write({ header: frames.header });
  for (const chunk of frames.chunks) stream.write({ chunk });
}

async function serverAndStream(t: Parameters<typeof startTestServer>[0]) {
  // No translation while the test looks: only the intake encodes anything.
  const server = await startTestServer(t, ['--translation-debounce', '60s']);
  const stream = openPush(mtlsClient(t, server, await registerCluster(server, 'a')));
  t.after(() => stream.cancel());
  return { server, stream };
}

test('given an agent that sends its input in canonical JSON, when the server takes it, then no resource is copied and encoded again and the stored input is the canonical one', async (t) => {
  const { server, stream } = await serverAndStream(t);
  const input = buildInputSnapshot({ cluster: 'a', epoch: 'e1', generation: 1, resources: resources() });
  const before = canonicalEncodingCount();
  pushText(stream, input.hash, snapshotEncoding(input));
  const ack = await next(stream, (m) => m.ack ?? undefined);
  assert.equal(ack.accepted, true);
  assert.equal(canonicalEncodingCount() - before, 0);
  const stored = await server.store.getInput('a');
  assert.equal(stored?.hash, input.hash);
});

test('given an agent whose text is valid JSON but not canonical (members out of order), when the server takes it, then each resource is encoded canonically and the stored input hashes canonically', async (t) => {
  const { server, stream } = await serverAndStream(t);
  const input = buildInputSnapshot({ cluster: 'a', epoch: 'e1', generation: 1, resources: resources() });
  // The same content with each resource's top-level members reversed: a text only its own hash names.
  const text = `[${input.resources.map((r) => JSON.stringify(Object.fromEntries(Object.entries(r).reverse()))).join(',')}]`;
  const before = canonicalEncodingCount();
  pushText(stream, sha256Hex(text), text);
  const ack = await next(stream, (m) => m.ack ?? undefined);
  assert.equal(ack.accepted, true, ack.message ?? '');
  assert.ok(canonicalEncodingCount() - before >= 100, 'every resource was encoded canonically');
  const stored = await server.store.getInput('a');
  assert.equal(stored?.hash, input.hash, 'the stored input carries the canonical hash');
  assert.equal(stored && canonicalJson(stored.resources), snapshotEncoding(input));
});
