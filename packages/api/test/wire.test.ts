import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  buildInputSnapshot,
  encodeSnapshotFrames,
  MAX_RESOURCE_DEPTH,
  MeshrelayError,
  relay,
  sha256Hex,
  snapshotEncoding,
  SnapshotAssembler,
  type Resource,
} from '../src/index.ts';

const LIMITS = { maxBytes: 8 * 1024 * 1024, maxResources: 10_000 };

function manyServices(n: number): Resource[] {
  return Array.from({ length: n }, (_, i) => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: `svc-${i}`, namespace: 'default', labels: { app: `svc-${i}` } },
    spec: { ports: [{ name: 'http', port: 8080 }], selector: { app: `svc-${i}` } },
  }));
}

async function roundTrip(resources: Resource[], chunkBytes: number) {
  const snap = buildInputSnapshot({ cluster: 'a', epoch: 'e1', generation: 3, resources });
  const frames = await encodeSnapshotFrames({ ...snap, encoding: snapshotEncoding(snap) }, { chunkBytes });
  const assembler = new SnapshotAssembler(frames.header, LIMITS);
  let done = false;
  for (const chunk of frames.chunks) done = assembler.add(chunk);
  assert.ok(done);
  return { snap, frames, out: await assembler.finish() };
}

test('given a large snapshot, when framed and reassembled, then it is chunked, compressed and identical', async () => {
  const { snap, frames, out } = await roundTrip(manyServices(2000), 16 * 1024);
  assert.ok(frames.chunks.length > 1);
  assert.equal(frames.header.encoding, 1);
  assert.equal(out.hash, snap.hash);
  assert.equal(out.generation, 3);
  assert.deepEqual(out.resources, snap.resources);
});

test('given an empty snapshot, when framed, then one empty chunk carries it', async () => {
  const { frames, out } = await roundTrip([], 1024);
  assert.equal(frames.chunks.length, 1);
  assert.deepEqual(out.resources, []);
});

const rejects = (code: string) => (e: unknown) => e instanceof MeshrelayError && e.code === code;

test('a header declaring more bytes than the limit is refused before any chunk', () => {
  assert.throws(
    () =>
      new SnapshotAssembler(
        { hash: 'a'.repeat(64), totalChunks: 1, totalBytes: 100 },
        { maxBytes: 10, maxResources: 10 },
      ),
    rejects('MESHRELAY_ERR_SNAPSHOT_TOO_LARGE'),
  );
});

test('content that does not match the declared hash is refused', async () => {
  const assembler = new SnapshotAssembler({ hash: 'a'.repeat(64), totalChunks: 1, totalBytes: 2 }, LIMITS);
  assembler.add({ index: 0, data: Buffer.from('[]') });
  await assert.rejects(assembler.finish(), rejects('MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH'));
});

test('undecodable content is refused', async () => {
  const body = Buffer.from('{not json');
  const assembler = new SnapshotAssembler({ hash: sha256Hex(body), totalChunks: 1, totalBytes: body.length }, LIMITS);
  assembler.add({ index: 0, data: body });
  await assert.rejects(assembler.finish(), rejects('MESHRELAY_ERR_SNAPSHOT_UNDECODABLE'));
});

test('chunks out of order are a protocol error', () => {
  const assembler = new SnapshotAssembler({ hash: 'a'.repeat(64), totalChunks: 2, totalBytes: 2 }, LIMITS);
  assert.throws(() => assembler.add({ index: 1, data: Buffer.from('[') }), rejects('MESHRELAY_ERR_PROTOCOL'));
});

test('a gzip bomb is stopped at the byte limit', async () => {
  const { gzipSync } = await import('node:zlib');
  const payload = gzipSync(Buffer.alloc(1024 * 1024, 0x20));
  const assembler = new SnapshotAssembler(
    { hash: 'a'.repeat(64), totalChunks: 1, totalBytes: 4000, encoding: 1 },
    { maxBytes: 4096, maxResources: 10 },
  );
  assembler.add({ index: 0, data: payload });
  await assert.rejects(assembler.finish(), rejects('MESHRELAY_ERR_SNAPSHOT_TOO_LARGE'));
});

test('given a header declaring billions of chunks for a small snapshot, when it arrives, then it is a protocol error naming the chunk limit', () => {
  assert.throws(
    () => new SnapshotAssembler({ hash: 'a'.repeat(64), totalChunks: 4_294_967_295, totalBytes: 1000 }, LIMITS),
    (e: unknown) =>
      rejects('MESHRELAY_ERR_PROTOCOL')(e) &&
      /declares 4294967295 chunks; 1000 bytes travel in at most \d+ chunks/.test((e as Error).message),
  );
});

test('given a multi-chunk snapshot, when a chunk other than the last is nearly empty, then it is a protocol error', () => {
  const assembler = new SnapshotAssembler({ hash: 'a'.repeat(64), totalChunks: 3, totalBytes: 3000 }, LIMITS);
  assert.throws(() => assembler.add({ index: 0, data: Buffer.alloc(0) }), rejects('MESHRELAY_ERR_PROTOCOL'));
});

test('given a declared size, when chunks carry more than it allows, then they are refused before being buffered', () => {
  const assembler = new SnapshotAssembler({ hash: 'a'.repeat(64), totalChunks: 2, totalBytes: 2000 }, LIMITS);
  assert.throws(() => assembler.add({ index: 0, data: Buffer.alloc(64 * 1024) }), rejects('MESHRELAY_ERR_PROTOCOL'));
});

test('given a resource nested deeper than the limit, when decoded, then it is refused as an invalid resource naming it', async () => {
  const deep = `${'['.repeat(MAX_RESOURCE_DEPTH + 5)}${']'.repeat(MAX_RESOURCE_DEPTH + 5)}`;
  const body = Buffer.from(
    `[{"apiVersion":"v1","kind":"Service","metadata":{"name":"deep","namespace":"default"},"spec":${deep}}]`,
  );
  const assembler = new SnapshotAssembler({ hash: sha256Hex(body), totalChunks: 1, totalBytes: body.length }, LIMITS);
  assembler.add({ index: 0, data: body });
  await assert.rejects(
    assembler.finish(),
    (e: unknown) => rejects('MESHRELAY_ERR_INVALID_RESOURCE')(e) && /Service default\/deep/.test((e as Error).message),
  );
});

test('given a 16 MiB snapshot, when its resources are parsed, then the event loop gets turns in between', async () => {
  const note = 'x'.repeat(4000);
  const one = JSON.stringify({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'n', namespace: 'default' },
    data: { note },
  });
  const text = `[${Array.from({ length: 4096 }, () => one).join(',')}]`;
  assert.ok(text.length > 16 * 1024 * 1024);
  let turns = 0;
  const ticker = setInterval(() => turns++, 0);
  const body = Buffer.from(text);
  const assembler = new SnapshotAssembler(
    { hash: sha256Hex(body), totalChunks: 1, totalBytes: body.length },
    { maxBytes: 32 * 1024 * 1024, maxResources: 10_000 },
  );
  assembler.add({ index: 0, data: body });
  const done = assembler.finish().finally(() => clearInterval(ticker));
  const out = await done;
  assert.equal(out.resources.length, 4096);
  assert.ok(turns > 1, `timers ran ${turns} times while the snapshot was decoded`);
});

test('given provenance with a stale entry, when framed, encoded to protobuf and reassembled, then the stale mark survives and fresh entries carry none', async () => {
  const snap = buildInputSnapshot({ cluster: 'a', epoch: 'e1', generation: 1, resources: [] });
  const provenance = [
    { cluster: 'a', inputHash: 'h1' },
    { cluster: 'c', inputHash: 'h3', stale: true },
  ];
  const frames = await encodeSnapshotFrames({ ...snap, encoding: snapshotEncoding(snap), provenance });
  const header = relay.v1.SnapshotHeader.decode(relay.v1.SnapshotHeader.encode(frames.header).finish());
  const assembler = new SnapshotAssembler(header, LIMITS);
  for (const chunk of frames.chunks) assembler.add(chunk);
  assert.deepEqual((await assembler.finish()).provenance, provenance);
});
