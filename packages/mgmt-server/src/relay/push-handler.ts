import type { ServerDuplexStream } from '@grpc/grpc-js';
import { MeshrelayError, SnapshotAssembler, toMeshrelayError, type relay } from '@meshrelay/api';
import type { RelayContext } from './relay-context.ts';
import { openRelayStream, type RelayStream } from './relay-stream.ts';

type PushCall = ServerDuplexStream<relay.v1.PushRequest, relay.v1.IPushResponse>;

/**
 * Relay.Push: receives input snapshots (header + chunks) from one agent and acks
 * each. The cluster comes from the peer certificate. A bad snapshot ends the
 * stream with a status naming the problem; the previously held snapshot stays.
 */
export function handlePush(ctx: RelayContext, call: PushCall): void {
  let assembler: SnapshotAssembler | undefined;
  let work: Promise<void> = Promise.resolve();

  const refuse = (stream: RelayStream<relay.v1.IPushResponse>, err: unknown): void => {
    const e = toMeshrelayError(err);
    stream.log.warn({ code: e.code, reason: e.message }, 'push refused a snapshot; the previous one stays');
    ctx.metrics.snapshotsRejected.inc({ cluster: stream.cluster, code: e.code });
    stream.fail(e);
  };
  const accept = async (stream: RelayStream<relay.v1.IPushResponse>, done: SnapshotAssembler): Promise<void> => {
    const assembled = done.finish();
    const result = await ctx.intake.accept(stream.cluster, assembled);
    ctx.metrics.recordInput(result.snapshot);
    stream.markWarmed();
    stream.write({ ack: { hash: assembled.hash, generation: assembled.generation, accepted: true, warnings: [...result.warnings] } });
    stream.log.info({ generation: result.snapshot.generation, hash: result.snapshot.hash, changed: result.changed }, 'input snapshot accepted');
    if (result.changed) ctx.onInputChanged(stream.cluster);
  };

  openRelayStream(ctx, call, 'push', (message, stream) => {
    try {
      if (message.header) {
        if (assembler) throw new MeshrelayError('MESHRELAY_ERR_PROTOCOL', 'a new snapshot header arrived before the previous snapshot was complete');
        assembler = new SnapshotAssembler(message.header, { maxBytes: ctx.limits.maxSnapshotBytes, maxResources: ctx.limits.maxResources });
      } else if (message.chunk) {
        if (!assembler) throw new MeshrelayError('MESHRELAY_ERR_PROTOCOL', 'a chunk arrived without a snapshot header');
        if (assembler.add(message.chunk)) {
          const done = assembler;
          assembler = undefined;
          work = work.then(() => accept(stream, done)).catch((err: unknown) => refuse(stream, err));
        }
      }
    } catch (err) {
      refuse(stream, err);
    }
  });
}
