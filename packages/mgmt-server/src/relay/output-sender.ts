import { encodeSnapshotFor, type HeldResources, type OutputSnapshot, type relay } from '@meshrelay/api';
import type { RelayStream } from './relay-stream.ts';

/** How one output went out: as a delta or full, and the bytes of its frames. */
export interface SentOutput {
  readonly kind: 'full' | 'delta';
  readonly wireBytes: number;
}

/**
 * Encodes the outputs of one Pull stream: after the agent acked an output as
 * applied on this stream, the next goes as a delta against it when that is
 * smaller. Anything else — the first output of a stream, after a refusal, after
 * the agent reported it does not hold the base — goes full. So does an output
 * whose delta would not be smaller on the wire.
 */
export class OutputSender {
  readonly #chunkBytes: number;
  /** The output the agent acked as applied on this stream: the only base a delta may use. */
  #base: HeldResources | undefined;
  /** Set from the agent's hello: an agent that does not say it takes deltas (an older one) gets every output full. */
  takesDeltas = false;
  /** Set from the agent's hello: only an agent that says so gets patches and relative provenance in its deltas. */
  takesPatches = false;

  constructor(chunkBytes: number) {
    this.#chunkBytes = chunkBytes;
  }

  async send(stream: RelayStream<relay.v1.IPullResponse>, output: OutputSnapshot): Promise<SentOutput> {
    const frames = await encodeSnapshotFor(this.#base, output, {
      chunkBytes: this.#chunkBytes,
      patches: this.takesPatches,
    });
    stream.write({ header: frames.header });
    for (const chunk of frames.chunks) stream.write({ chunk });
    return { kind: frames.kind, wireBytes: frames.wireBytes };
  }

  /** Records the agent's verdict on `output`: applied makes it the next base; any refusal drops the base. */
  acked(output: OutputSnapshot, ack: relay.v1.IAck): void {
    this.#base = ack.accepted && this.takesDeltas ? output : undefined;
  }

  /** True when the agent refused because it could not take a delta: the output is to go again, full. */
  wantsFull(ack: relay.v1.IAck): boolean {
    return (
      !ack.accepted &&
      (ack.errorCode === 'MESHRELAY_ERR_DELTA_BASE_MISMATCH' || ack.errorCode === 'MESHRELAY_ERR_DELTA_LIMIT')
    );
  }
}
