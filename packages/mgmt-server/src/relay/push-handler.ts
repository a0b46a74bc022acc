import type { ServerDuplexStream } from '@grpc/grpc-js';
import { MeshrelayError, SnapshotAssembler, toMeshrelayError, type relay } from '@meshrelay/api';
import type { RelayContext } from './relay-context.ts';
import { openRelayStream, type RelayStream } from './relay-stream.ts';

type PushCall = ServerDuplexStream<relay.v1.PushRequest, relay.v1.IPushResponse>;

/**
 * Relay.Push: receives input snapshots (header + chunks) from one agent and acks
 * each. The cluster comes from the peer certificate. One snapshot at a time: a
 * header while the previous snapshot is still arriving or being taken in is a
 * protocol error, so a peer can make the server hold at most one snapshot. A
 * snapshot must arrive completely within the transfer deadline. A bad snapshot
 * ends the stream with a status naming the problem; the previously held
 * snapshot stays.
 */
export function handlePush(ctx: RelayContext, call: PushCall): void {
  let assembler: SnapshotAssembler | undefined;
  let deadline: NodeJS.Timeout | undefined;
  let busy = false;

  const refuse = (stream: RelayStream<relay.v1.IPushResponse>, err: unknown): void => {
    clearTimeout(deadline);
    assembler = undefined;
    const e = toMeshrelayError(err);
    stream.log.warn({ code: e.code, reason: e.message }, 'push refused a snapshot; the previous one stays');
    ctx.metrics.snapshotsRejected.inc({ cluster: stream.cluster, code: e.code });
    stream.fail(e);
  };
  const accept = async (stream: RelayStream<relay.v1.IPushResponse>, done: SnapshotAssembler): Promise<void> => {
    const assembled = await done.finish();
    const result = await ctx.intake.accept(stream.cluster, assembled);
    ctx.metrics.recordInput(result.snapshot);
    stream.markWarmed();
    stream.write({ ack: { hash: assembled.hash, generation: assembled.generation, accepted: true, warnings: [...result.warnings] } });
    stream.log.info({ generation: result.snapshot.generation, hash: result.snapshot.hash, changed: result.changed }, 'input snapshot accepted');
    if (result.changed) ctx.onInputChanged(stream.cluster);
  };
  const startSnapshot = (stream: RelayStream<relay.v1.IPushResponse>, header: relay.v1.ISnapshotHeader): void => {
    if (assembler || busy) throw new MeshrelayError('MESHRELAY_ERR_PROTOCOL', 'a new snapshot header arrived before the previous snapshot was acked');
    assembler = new SnapshotAssembler(header, { maxBytes: ctx.limits.maxSnapshotBytes, maxResources: ctx.limits.maxResources });
    const limitMs = ctx.limits.snapshotTransferTimeoutMs;
    deadline = setTimeout(() => {
      refuse(stream, new MeshrelayError('MESHRELAY_ERR_SNAPSHOT_TIMEOUT', `snapshot did not arrive completely within ${limitMs} ms (--snapshot-transfer-timeout)`));
    }, limitMs);
  };
  const addChunk = (stream: RelayStream<relay.v1.IPushResponse>, chunk: relay.v1.ISnapshotChunk): void => {
    if (!assembler) throw new MeshrelayError('MESHRELAY_ERR_PROTOCOL', 'a chunk arrived without a snapshot header');
    if (!assembler.add(chunk)) return;
    clearTimeout(deadline);
    const done = assembler;
    assembler = undefined;
    busy = true;
    accept(stream, done)
      .catch((err: unknown) => refuse(stream, err))
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
        refuse(stream, err);
      }
    },
    () => {
      clearTimeout(deadline);
      assembler = undefined;
    },
  );
}
