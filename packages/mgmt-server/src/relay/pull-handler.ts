import type { ServerDuplexStream } from '@grpc/grpc-js';
import { copyProvenance, encodeSnapshotFrames, resourceId, snapshotEncoding, type OutputSnapshot, type relay } from '@meshrelay/api';
import { assessOutput, type HeldState } from '../blast-radius.ts';
import { newerInputsHeld } from '../provenance-order.ts';
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
  let heldState: HeldState = { keys: new Set(), provenance: [] };
  const unsubscribes: (() => void)[] = [];

  /** The blast-radius guard: true when the output may go to this agent now. */
  const mayDeliver = (stream: RelayStream<relay.v1.IPullResponse>, output: OutputSnapshot): boolean => {
    if (ctx.held.isReleased(output)) return true;
    // A cluster whose contribution an operator released is positive evidence for its removal.
    const registered = new Set(ctx.registry.list().map((c) => c.metadata.name).filter((c) => !ctx.contributions.isReleased(c)));
    const verdict = assessOutput(ctx.blastRadius, heldState, output, registered);
    if (verdict.verdict === 'send') return true;
    const { verdict: _, ...held } = verdict;
    ctx.held.hold({ cluster: stream.cluster, hash: output.hash, ...held }, ctx.now());
    stream.log.warn({ hash: output.hash, reason: verdict.reason, deleted: verdict.deleted }, `output held: ${verdict.message}`);
    return false;
  };

  const send = (stream: RelayStream<relay.v1.IPullResponse>, output: OutputSnapshot): void => {
    if (stream.isClosed() || agentHolds === undefined) return;
    if (output.hash === agentHolds) {
      // The agent already holds it: nothing to send, and nothing held back any more.
      ctx.held.clear(stream.cluster);
      return;
    }
    // Never roll an agent back (DESIGN §13): wait for inputs at least as new as those it holds.
    const newer = newerInputsHeld(heldState.provenance, output.provenance);
    if (newer.length > 0) {
      stream.log.info({ hash: output.hash, newer }, 'agent holds an output built from newer inputs; waiting for them');
      return;
    }
    if (!mayDeliver(stream, output)) return;
    ctx.held.clear(stream.cluster);
    const frames = encodeSnapshotFrames(
      { hash: output.hash, encoding: snapshotEncoding(output), provenance: output.provenance },
      { chunkBytes: ctx.limits.chunkBytes },
    );
    stream.write({ header: frames.header });
    for (const chunk of frames.chunks) stream.write({ chunk });
    agentHolds = output.hash;
    heldState = { keys: new Set(output.resources.map(resourceId)), provenance: output.provenance };
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
        const hello = message.hello;
        const heldHash = hello.heldHash ?? '';
        agentHolds = heldHash;
        heldState = {
          keys: new Set(hello.heldKeys ?? []),
          provenance: (hello.heldProvenance ?? []).map(copyProvenance),
        };
        ctx.connections.setApplied(stream.cluster, heldHash);
        const resend = () => {
          const current = ctx.outputs.current(stream.cluster);
          if (current) send(stream, current);
        };
        unsubscribes.push(ctx.outputs.subscribe(stream.cluster, (output) => send(stream, output)));
        // An operator's release makes the held output deliverable.
        unsubscribes.push(ctx.held.onRelease((cluster) => {
          if (cluster === stream.cluster) resend();
        }));
        resend();
      } else if (message.ack) {
        const ack = message.ack;
        if (ack.accepted) ctx.connections.setApplied(stream.cluster, ack.hash ?? '');
        stream.log.info(
          { hash: ack.hash, accepted: ack.accepted, reason: ack.message || undefined },
          ack.accepted ? 'agent applied output' : 'agent could not apply output',
        );
      }
    },
    () => unsubscribes.forEach((u) => u()),
  );
}
