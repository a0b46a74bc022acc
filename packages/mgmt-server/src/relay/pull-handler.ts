import type { ServerDuplexStream } from '@grpc/grpc-js';
import { copyProvenance, resourceId, type OutputSnapshot, type relay } from '@meshrelay/api';
import { assessOutput, type HeldState } from '../blast-radius.ts';
import { newerInputsHeld } from '../provenance-order.ts';
import type { RelayContext } from './relay-context.ts';
import { openRelayStream, type RelayStream } from './relay-stream.ts';
import { OutputSender } from './output-sender.ts';
import { feedStatuses } from './status-feed.ts';

type PullCall = ServerDuplexStream<relay.v1.PullRequest, relay.v1.IPullResponse>;
type Stream = RelayStream<relay.v1.IPullResponse>;

interface InFlight {
  readonly output: OutputSnapshot;
  /** Becomes the agent's held state once it acks the output as applied. */
  readonly state: HeldState;
}

/**
 * Relay.Pull: after the agent's hello (naming the output it holds), sends the
 * cluster's output whenever its hash differs from what the agent holds.
 *
 * Flow control: one output in flight at a time. The next goes out only after
 * the agent acked the previous one, and of the outputs produced meanwhile only
 * the newest is kept; so a slow or stalled agent costs at most one output in
 * the stream's queue plus one pending, however many translations run.
 *
 * The blast-radius guard judges each output against what the agent holds:
 * what it announced in its hello, then each output it acked as applied. An
 * output it refused changes nothing there.
 */
export function handlePull(ctx: RelayContext, call: PullCall): void {
  let agentHolds: string | undefined;
  let heldState: HeldState = { keys: new Set(), provenance: [] };
  let inFlight: InFlight | undefined;
  let pending: OutputSnapshot | undefined;
  /** Hash of the last output the agent refused: not sent again until another output came. */
  let refused: string | undefined;
  const unsubscribes: (() => void)[] = [];
  /**
   * The cluster, once its agent reported its data plane on this stream (its record is marked disconnected at the end).
   */
  let reportedBy: string | undefined;
  const sender = new OutputSender(ctx.limits.chunkBytes);

  /** The blast-radius guard: true when the output may go to this agent now. */
  const mayDeliver = (stream: Stream, output: OutputSnapshot): boolean => {
    if (ctx.held.isReleased(output)) return true;
    // A cluster whose contribution an operator released is positive evidence for its removal.
    const registered = new Set(
      ctx.registry
        .list()
        .map((c) => c.metadata.name)
        .filter((c) => !ctx.contributions.isReleased(c)),
    );
    const verdict = assessOutput(ctx.blastRadius, heldState, output, registered);
    if (verdict.verdict === 'send') return true;
    const { verdict: _, ...held } = verdict;
    ctx.held.hold({ cluster: stream.cluster, hash: output.hash, ...held }, ctx.now());
    stream.log.warn(
      { hash: output.hash, reason: verdict.reason, deleted: verdict.deleted },
      `output held: ${verdict.message}`,
    );
    return false;
  };

  /** Sends the pending output if nothing is in flight and the guard lets it through. */
  const pump = async (stream: Stream): Promise<void> => {
    const output = pending;
    if (stream.isClosed() || agentHolds === undefined || inFlight || !output) return;
    pending = undefined;
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
    if (output.hash === refused || !mayDeliver(stream, output)) return;
    ctx.held.clear(stream.cluster);
    inFlight = { output, state: { keys: new Set(output.resources.map(resourceId)), provenance: output.provenance } };
    const sent = await sender.send(stream, output);
    ctx.metrics.outputPushes.inc({ cluster: stream.cluster });
    ctx.metrics.snapshotBytes.inc({ cluster: stream.cluster, direction: 'pull', kind: sent.kind }, sent.wireBytes);
    stream.log.info(
      { hash: output.hash, bytes: output.bytes, kind: sent.kind, wireBytes: sent.wireBytes },
      'output sent',
    );
  };
  const offer = (stream: Stream, output: OutputSnapshot): void => {
    pending = output;
    pump(stream).catch((err: unknown) => stream.fail(err));
  };

  const onAck = (stream: Stream, ack: relay.v1.IAck): void => {
    const hash = ack.hash ?? '';
    if (!inFlight || inFlight.output.hash !== hash) {
      stream.log.warn({ hash, inFlight: inFlight?.output.hash }, 'pull ack for an output not in flight; ignored');
      return;
    }
    sender.acked(inFlight.output, ack);
    if (ack.accepted) {
      agentHolds = hash;
      heldState = inFlight.state;
      refused = undefined;
      ctx.connections.setApplied(stream.cluster, hash);
      stream.log.info({ hash }, 'agent applied output');
    } else if (sender.wantsFull(ack)) {
      // The agent could not take the delta: the same output goes again, full.
      stream.log.warn({ hash, reason: ack.message }, 'agent does not hold the delta base; resending the output full');
      pending ??= inFlight.output;
    } else {
      refused = hash;
      ctx.metrics.recordOutputRefused(stream.cluster, ack.errorCode ?? '');
      stream.log.warn(
        { hash, code: ack.errorCode, reason: ack.message },
        'agent could not apply output; it keeps its previous one',
      );
    }
    inFlight = undefined;
    // Whatever came meanwhile, or (after a release) the current output.
    if (pending) offer(stream, pending);
  };

  const onHello = (stream: Stream, hello: relay.v1.IPullHello): void => {
    if (agentHolds !== undefined) return;
    const heldHash = hello.heldHash ?? '';
    agentHolds = heldHash;
    sender.takesDeltas = hello.acceptsDeltas === true;
    sender.takesPatches = hello.acceptsPatches === true;
    heldState = {
      keys: new Set(hello.heldKeys ?? []),
      provenance: (hello.heldProvenance ?? []).map(copyProvenance),
    };
    ctx.connections.setApplied(stream.cluster, heldHash);
    const resend = () => {
      const current = ctx.outputs.current(stream.cluster);
      if (current) offer(stream, current);
    };
    unsubscribes.push(ctx.outputs.subscribe(stream.cluster, (output) => offer(stream, output)));
    // An operator's release makes the held output deliverable.
    unsubscribes.push(
      ctx.held.onRelease((cluster) => {
        if (cluster === stream.cluster) resend();
      }),
    );
    resend();
    if (ctx.resourceStatuses) unsubscribes.push(feedStatuses(ctx.resourceStatuses, stream));
  };

  openRelayStream(
    ctx,
    call,
    'pull',
    (message, stream) => {
      if (message.hello) onHello(stream, message.hello);
      else if (message.ack) onAck(stream, message.ack);
      else if (message.dataPlane) {
        reportedBy = stream.cluster;
        ctx.dataPlane?.record(stream.cluster, message.dataPlane, ctx.now());
      } else if (message.interest) ctx.interests?.renew(stream.cluster, message.interest);
    },
    () => {
      unsubscribes.forEach((u) => u());
      if (reportedBy !== undefined) ctx.dataPlane?.disconnected(reportedBy);
    },
  );
}
