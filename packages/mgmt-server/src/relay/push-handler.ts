import type { ServerDuplexStream } from '@grpc/grpc-js';
import {
  MeshrelayError,
  SnapshotAssembler,
  adoptCanonicalTexts,
  canonicalResource,
  resolveDelta,
  snapshotWireBytes,
  toMeshrelayError,
  type AssembledSnapshot,
  type ErrorCode,
  type HeldResources,
  type relay,
} from '@meshrelay/api';
import type { RelayContext } from './relay-context.ts';
import { openRelayStream, type RelayStream } from './relay-stream.ts';

type PushCall = ServerDuplexStream<relay.v1.PushRequest, relay.v1.IPushResponse>;
type Stream = RelayStream<relay.v1.IPushResponse>;

/**
 * Refusals of one snapshot's content: answered with an ack accepted=false and
 * the stream stays up (the agent waits for a new snapshot). Anything else —
 * messages out of order, a transfer past its deadline, an internal failure —
 * ends the stream with a status, and the agent reconnects.
 */
const SNAPSHOT_REFUSALS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'MESHRELAY_ERR_SNAPSHOT_TOO_LARGE',
  'MESHRELAY_ERR_SNAPSHOT_UNDECODABLE',
  'MESHRELAY_ERR_SNAPSHOT_HASH_MISMATCH',
  'MESHRELAY_ERR_SNAPSHOT_STALE',
  'MESHRELAY_ERR_INVALID_RESOURCE',
  // The agent sends the snapshot full next.
  'MESHRELAY_ERR_DELTA_BASE_MISMATCH',
  // A delta whose patches would pass a limit (before they were paid for); the input held stays.
  'MESHRELAY_ERR_DELTA_LIMIT',
]);

/**
 * Relay.Push: receives input snapshots (header + chunks) from one agent and acks
 * each. The cluster comes from the peer certificate. One snapshot at a time: a
 * header while the previous snapshot is still arriving or being taken in is a
 * protocol error, so a peer can make the server hold at most one snapshot. A
 * snapshot (or the chunks of a refused one, which are read and dropped) must
 * arrive within the transfer deadline. A refused snapshot is NACKed with the
 * reason; the previously held snapshot stays.
 *
 * A delta snapshot applies to the last snapshot accepted on this stream (as the
 * agent sent it, before validation dropped anything); any other base is
 * refused with MESHRELAY_ERR_DELTA_BASE_MISMATCH.
 *
 * Resume: an empty delta against itself (base hash = hash, no upserts, no
 * deleted keys) says "I still hold what you accepted". When the store holds
 * exactly that input for the cluster (same epoch, generation and hash, learnt
 * from its version without reading the value), it is acked as accepted without
 * the snapshot being sent, read or stored again, and it becomes this stream's
 * base. Otherwise it is an ordinary delta: applied to this stream's base, or
 * refused with MESHRELAY_ERR_DELTA_BASE_MISMATCH (the agent then sends full).
 */
export function handlePush(ctx: RelayContext, call: PushCall): void {
  let assembler: SnapshotAssembler | undefined;
  /** Chunks of a refused snapshot still to be read and dropped: [next index, total]. */
  let discarding: [number, number] | undefined;
  let deadline: NodeJS.Timeout | undefined;
  let busy = false;
  /**
   * The last snapshot accepted on this stream, as sent: the base of the agent's next delta.
   * After a resume only its hash: its resources are read from the store when a delta needs them.
   */
  let base: HeldResources | { readonly hash: string; readonly resources?: undefined } | undefined;

  const fail = (stream: Stream, err: unknown): void => {
    clearTimeout(deadline);
    const e = toMeshrelayError(err);
    stream.log.warn({ code: e.code, reason: e.message }, 'push stream ended');
    ctx.metrics.snapshotsRejected.inc({ cluster: stream.cluster, code: e.code });
    stream.fail(e);
  };
  const nack = (stream: Stream, header: relay.v1.ISnapshotHeader, e: MeshrelayError): void => {
    stream.log.warn(
      { code: e.code, reason: e.message, generation: Number(header.generation ?? 0), hash: header.hash },
      'input snapshot refused; the previous one stays',
    );
    ctx.metrics.snapshotsRejected.inc({ cluster: stream.cluster, code: e.code });
    stream.write({
      ack: {
        hash: header.hash ?? '',
        generation: header.generation ?? 0,
        accepted: false,
        errorCode: e.code,
        message: e.message,
      },
    });
  };
  /** NACKs a content refusal; anything else ends the stream. */
  const refuse = (stream: Stream, header: relay.v1.ISnapshotHeader, err: unknown): void => {
    const e = toMeshrelayError(err);
    if (SNAPSHOT_REFUSALS.has(e.code)) nack(stream, header, e);
    else fail(stream, e);
  };

  /** The stream's base with its resources; a resumed base whose stored input changed since is none. */
  const heldBase = async (stream: Stream): Promise<HeldResources | undefined> => {
    if (!base || base.resources) return base;
    const held = await ctx.store.getInput(stream.cluster);
    return held?.hash === base.hash ? held : undefined;
  };
  /** Acks a resume the store can honour; false when it cannot (the snapshot is then needed). */
  const resume = async (stream: Stream, claim: AssembledSnapshot): Promise<boolean> => {
    const held = await ctx.intake.resume(stream.cluster, claim);
    if (!held) return false;
    base = { hash: held.hash };
    ctx.metrics.recordInput(stream.cluster, held);
    stream.markWarmed();
    stream.write({
      ack: {
        hash: claim.hash,
        generation: claim.generation,
        accepted: true,
        acceptsDeltas: true,
        acceptsPatches: true,
        warnings: [],
      },
    });
    stream.log.info({ generation: held.generation, hash: held.hash }, 'input snapshot resumed by hash');
    return true;
  };

  const accept = async (stream: Stream, done: SnapshotAssembler): Promise<void> => {
    const limits = {
      maxBytes: ctx.limits.maxSnapshotBytes,
      maxResources: ctx.limits.maxResources,
      patch: ctx.limits.patch,
    };
    const kind = done.header.baseHash ? 'delta' : 'full';
    ctx.metrics.snapshotBytes.inc(
      { cluster: stream.cluster, direction: 'push', kind },
      snapshotWireBytes(done.header, done.receivedBytes),
    );
    const received = await done.finish();
    if (isResume(received) && (await resume(stream, received))) return;
    // A delta's resources become canonical copies before they are merged, as the intake would
    // make them: the input it builds is then the resolved list itself, hashed with checkpoints.
    const copied = received.delta
      ? { ...received, resources: received.resources.map((r) => canonicalResource(r, false)) }
      : received;
    const assembled = await resolveDelta(copied, await heldBase(stream), limits);
    // A full snapshot's resources whose received text is canonical are marked as such (the text
    // is not kept): intake then builds the input without copying or canonically encoding them.
    if (assembled.texts) await adoptCanonicalTexts(assembled.resources, assembled.texts);
    // Translation starts as soon as the new input is in memory, while it is written to Redis.
    const result = await ctx.intake.accept(stream.cluster, assembled, () => ctx.onInputChanged(stream.cluster));
    // The stored snapshot is the same content when validation dropped nothing: keep one copy.
    base =
      result.snapshot.hash === assembled.hash
        ? result.snapshot
        : { hash: assembled.hash, resources: assembled.resources };
    ctx.metrics.recordInput(stream.cluster, {
      bytes: result.snapshot.bytes,
      resources: result.snapshot.resources.length,
    });
    stream.markWarmed();
    stream.write({
      ack: {
        hash: assembled.hash,
        generation: assembled.generation,
        accepted: true,
        acceptsDeltas: true,
        acceptsPatches: true,
        warnings: [...result.warnings],
      },
    });
    stream.log.info(
      { generation: result.snapshot.generation, hash: result.snapshot.hash, changed: result.changed },
      'input snapshot accepted',
    );
  };
  const startSnapshot = (stream: Stream, header: relay.v1.ISnapshotHeader): void => {
    if (assembler || discarding || busy)
      throw new MeshrelayError(
        'MESHRELAY_ERR_PROTOCOL',
        'a new snapshot header arrived before the previous snapshot was acked',
      );
    const limitMs = ctx.limits.snapshotTransferTimeoutMs;
    deadline = setTimeout(() => {
      fail(
        stream,
        new MeshrelayError(
          'MESHRELAY_ERR_SNAPSHOT_TIMEOUT',
          `snapshot did not arrive completely within ${limitMs} ms (--snapshot-transfer-timeout)`,
        ),
      );
    }, limitMs);
    try {
      assembler = new SnapshotAssembler(header, {
        maxBytes: ctx.limits.maxSnapshotBytes,
        maxResources: ctx.limits.maxResources,
      });
    } catch (err) {
      refuse(stream, header, err);
      discarding = [0, Math.max(1, Number(header.totalChunks ?? 1))];
    }
  };
  const discardChunk = (chunk: relay.v1.ISnapshotChunk, [next, total]: [number, number]): void => {
    if ((chunk.index ?? 0) !== next)
      throw new MeshrelayError(
        'MESHRELAY_ERR_PROTOCOL',
        `expected chunk ${next} of a refused snapshot, got chunk ${chunk.index ?? 0}`,
      );
    discarding = next + 1 < total ? [next + 1, total] : undefined;
    if (!discarding) clearTimeout(deadline);
  };
  const addChunk = (stream: Stream, chunk: relay.v1.ISnapshotChunk): void => {
    if (discarding) return discardChunk(chunk, discarding);
    if (!assembler) throw new MeshrelayError('MESHRELAY_ERR_PROTOCOL', 'a chunk arrived without a snapshot header');
    const current = assembler;
    try {
      if (!current.add(chunk)) return;
    } catch (err) {
      assembler = undefined;
      const e = toMeshrelayError(err);
      refuse(stream, current.header, e);
      // The rest of a refused snapshot is read and dropped, within the same deadline.
      const total = Number(current.header.totalChunks ?? 1);
      if (SNAPSHOT_REFUSALS.has(e.code) && (chunk.index ?? 0) + 1 < total) discarding = [(chunk.index ?? 0) + 1, total];
      else clearTimeout(deadline);
      return;
    }
    clearTimeout(deadline);
    assembler = undefined;
    busy = true;
    accept(stream, current)
      .catch((err: unknown) => refuse(stream, current.header, err))
      .finally(() => (busy = false));
  };

  openRelayStream(
    ctx,
    call,
    'push',
    (message, stream) => {
      try {
        if (message.header) startSnapshot(stream, message.header);
        else if (message.chunk) addChunk(stream, message.chunk);
      } catch (err) {
        fail(stream, err);
      }
    },
    () => {
      clearTimeout(deadline);
      assembler = undefined;
      discarding = undefined;
    },
  );
}

/** An empty delta against the snapshot it names: the sender still holds what it sent before. */
function isResume(assembled: AssembledSnapshot): boolean {
  const delta = assembled.delta;
  return (
    delta !== undefined &&
    delta.baseHash === assembled.hash &&
    delta.deletedKeys.length === 0 &&
    assembled.resources.length === 0
  );
}
