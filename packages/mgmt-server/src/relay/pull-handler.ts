import type { ServerDuplexStream } from '@grpc/grpc-js';
import { encodeSnapshotFrames, snapshotEncoding, type OutputSnapshot, type relay } from '@meshrelay/api';
import type { RelayContext } from './relay-context.ts';
import { openRelayStream, type RelayStream } from './relay-stream.ts';

type PullCall = ServerDuplexStream<relay.v1.PullRequest, relay.v1.IPullResponse>;

/**
 * Relay.Pull: after the agent's hello (naming the output hash it holds), sends
 * the cluster's output whenever its hash differs from what the agent holds, and
 * records the agent's acks. Never sends the same hash twice on a stream.
 */
export function handlePull(ctx: RelayContext, call: PullCall): void {
  let agentHolds: string | undefined;
  let unsubscribe: (() => void) | undefined;

  const send = (stream: RelayStream<relay.v1.IPullResponse>, output: OutputSnapshot): void => {
    if (stream.isClosed() || agentHolds === undefined || output.hash === agentHolds) return;
    const frames = encodeSnapshotFrames(
      { hash: output.hash, encoding: snapshotEncoding(output), provenance: output.provenance },
      { chunkBytes: ctx.limits.chunkBytes },
    );
    stream.write({ header: frames.header });
    for (const chunk of frames.chunks) stream.write({ chunk });
    agentHolds = output.hash;
    ctx.metrics.outputPushes.inc({ cluster: stream.cluster });
    stream.log.info({ hash: output.hash, bytes: output.bytes }, 'output sent');
  };

  openRelayStream(
    ctx,
    call,
    'pull',
    (message, stream) => {
      if (message.hello) {
        if (agentHolds !== undefined) return;
        const held = message.hello.heldHash ?? '';
        agentHolds = held;
        ctx.connections.setApplied(stream.cluster, held);
        unsubscribe = ctx.outputs.subscribe(stream.cluster, (output) => send(stream, output));
        const current = ctx.outputs.current(stream.cluster);
        if (current) send(stream, current);
      } else if (message.ack) {
        const ack = message.ack;
        if (ack.accepted) ctx.connections.setApplied(stream.cluster, ack.hash ?? '');
        stream.log.info(
          { hash: ack.hash, accepted: ack.accepted, reason: ack.message || undefined },
          ack.accepted ? 'agent applied output' : 'agent could not apply output',
        );
      }
    },
    () => unsubscribe?.(),
  );
}
