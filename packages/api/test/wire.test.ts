import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildInputSnapshot, encodeSnapshotFrames, MeshrelayError, relay, sha256Hex, snapshotEncoding, SnapshotAssembler, type Resource } from '../src/index.ts';

const LIMITS = { maxBytes: 8 * 1024 * 1024, maxResources: 10_000 };

function manyServices(n: number): Resource[] {
  return Array.from({ length: n }, (_, i) => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: `svc-${i}`, namespace: 'default', labels: { app: `svc-${i}` } },
    spec: { ports: [{ name: 'http', port: 8080 }], selector: { app: `svc-${i}` } },
  }));
}

function roundTrip(resources: Resource[], chunkBytes: number) {
  const snap = buildInputSnapshot({ cluster: 'a', epoch: 'e1', generation: 3, resources });
  const frames = encodeSnapshotFrames({ ...snap, encoding: snapshotEncoding(snap) }, { chunkBytes });
  const assembler = new SnapshotAssembler(frames.header, LIMITS);
  let done = false;
  for (const chunk of frames.chunks) done = assembler.add(chunk);
  assert.ok(done);
  return { snap, frames, out: assembler.finish() };
}

test('given a large snapshot, when framed and reassembled, then it is chunked, compressed and identical', () => {
  const { snap, frames, out } = roundTrip(manyServices(2000), 16 * 1024);
  assert.ok(frames.chunks.length > 1);
  assert.equal(frames.header.encoding, 1);
  assert.equal(out.hash, snap.hash);
  assert.equal(out.generation, 3);
  assert.deepEqual(out.resources, snap.resources);
});

test('given an empty snapshot, when framed, then one empty chunk carries it', () => {
  const { frames, out } = roundTrip([], 1024);
  assert.equal(frames.chunks.length, 1);
  assert.deepEqual(out.resources, []);
});

const rejects = (code: string) => (e: unknown) => e instanceof MeshrelayError && e.code === code;

test('a header declaring more bytes than the limit is refused before any chunk', () => {
  assert.throws(
    () => new SnapshotAssembler({ hash: 'a'.repeat(64), totalChunks: 1, totalBytes: 100 }, { maxBytes: 10, maxResources: 10 }),
    rejects('MESHRELAY_ERR_SNAPSHOT_TOO_LARGE'),
  );
});

test('content that does not match the declared hash is refused', () => {
  const assembler = new SnapshotAssembler({ hash: 'a'.repeat(64), totalChunks: 1, totalBytes: 2 }, LIMITS);
  assembler.add({ index: 0, data: Buffer.from('[]') });
  assert.throws(() => assembler.finish(), rejects('MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH'));
});

test('undecodable content is refused', () => {
  const body = Buffer.from('{not json');
  const assembler = new SnapshotAssembler({ hash: sha256Hex(body), totalChunks: 1, totalBytes: body.length }, LIMITS);
  assembler.add({ index: 0, data: body });
  assert.throws(() => assembler.finish(), rejects('MESHRELAY_ERR_SNAPSHOT_UNDECODABLE'));
});

test('chunks out of order are a protocol error', () => {
  const assembler = new SnapshotAssembler({ hash: 'a'.repeat(64), totalChunks: 2, totalBytes: 2 }, LIMITS);
  assert.throws(() => assembler.add({ index: 1, data: Buffer.from('[') }), rejects('MESHRELAY_ERR_PROTOCOL'));
});

test('a gzip bomb is stopped at the byte limit', async () => {
  const { gzipSync } = await import('node:zlib');
  const payload = gzipSync(Buffer.alloc(1024 * 1024, 0x20));
  const assembler = new SnapshotAssembler({ hash: 'a'.repeat(64), totalChunks: 1, totalBytes: 10, encoding: 1 }, { maxBytes: 4096, maxResources: 10 });
  assembler.add({ index: 0, data: payload });
  assert.throws(() => assembler.finish(), rejects('MESHRELAY_ERR_SNAPSHOT_TOO_LARGE'));
});


test('given provenance with a stale entry, when framed, encoded to protobuf and reassembled, then the stale mark survives and fresh entries carry none', () => {
  const snap = buildInputSnapshot({ cluster: 'a', epoch: 'e1', generation: 1, resources: [] });
  const provenance = [{ cluster: 'a', inputHash: 'h1' }, { cluster: 'c', inputHash: 'h3', stale: true }];
  const frames = encodeSnapshotFrames({ ...snap, encoding: snapshotEncoding(snap), provenance });
  const header = relay.v1.SnapshotHeader.decode(relay.v1.SnapshotHeader.encode(frames.header).finish());
  const assembler = new SnapshotAssembler(header, LIMITS);
  for (const chunk of frames.chunks) assembler.add(chunk);
  assert.deepEqual(assembler.finish().provenance, provenance);
});
