import type { Client, ClientDuplexStream, StatusObject } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import {
  OutboundWriter,
  RELAY_SERVICE,
  StreamHeartbeat,
  encodeSnapshotFor,
  encodeSnapshotFrames,
  relayMessageBytes,
  sha256Hex,
  type InputSnapshot,
  type SnapshotFrames,
  type relay,
} from '@meshrelay/api';
import { outcomeOfStatus, type SessionOutcome } from './session-outcome.ts';

/** The server's verdict on one pushed snapshot. */
export interface PushAck {
  readonly hash: string;
  readonly generation: number;
  readonly accepted: boolean;
  readonly errorCode: string;
  readonly message: string;
  readonly warnings: readonly string[];
}

export interface PushStreamOptions {
  readonly client: Client;
  /** The newest snapshot, or undefined when discovery has produced none yet. */
  readonly latest: () => InputSnapshot | undefined;
  /** A snapshot a server already refused: not sent on this stream either (the agent waits for a new one). */
  readonly refused?: InputSnapshot;
  readonly heartbeatIntervalMs: number;
  readonly heartbeatTimeoutMs: number;
  readonly maxSnapshotBytes: number;
  readonly logger: Logger;
  readonly onOpen: () => void;
  readonly onSent: (snapshot: InputSnapshot) => void;
  readonly onAck: (snapshot: InputSnapshot, ack: PushAck) => void;
  /** Called once, with why the stream ended. */
  readonly onEnd: (outcome: SessionOutcome) => void;
  /**
   * Snapshots a server that takes deltas accepted, on any stream of the owner (the relay client).
   * Such a snapshot opens a later stream as a resume; one a server could not resume leaves the set
   * until a server accepts it again. Weak: a snapshot the agent dropped is forgotten with it.
   */
  readonly acceptedByDeltaServers: WeakSet<InputSnapshot>;
}

type PushCall = ClientDuplexStream<relay.v1.IPushRequest, relay.v1.IPushResponse>;

const EMPTY_PAYLOAD = '[]';

/** An empty delta of `snapshot` against itself: it names the snapshot and carries none of it. */
function resumeFrames({ hash, epoch, generation }: InputSnapshot): Promise<SnapshotFrames> {
  return encodeSnapshotFrames({
    hash,
    epoch,
    generation,
    encoding: EMPTY_PAYLOAD,
    delta: { baseHash: hash, payloadHash: sha256Hex(EMPTY_PAYLOAD), deletedKeys: [] },
  });
}

/**
 * One Relay.Push stream. Sends the current snapshot first, then keeps exactly
 * one snapshot in flight: the next goes out after the ack, and only the newest
 * of those produced meanwhile. A snapshot the server refused (ack
 * accepted=false) is never sent again: the stream waits for a newer one.
 *
 * After the server accepted a snapshot on this stream, the next goes as a delta
 * against it when that is smaller. If the server answers that it does not hold
 * that base (MESHRELAY_ERR_DELTA_BASE_MISMATCH), the same snapshot goes again,
 * full; that refusal is not the snapshot's.
 *
 * Resume: when the newest snapshot is one a server that takes deltas accepted
 * before (on an earlier stream, perhaps of a server since restarted), the
 * stream opens with it as an empty delta against itself. A server that holds
 * it acks it without the snapshot travelling; one that does not answers
 * MESHRELAY_ERR_DELTA_BASE_MISMATCH and it goes full, as above.
 */
export class PushStream {
  readonly #opts: PushStreamOptions;
  readonly #call: PushCall;
  readonly #heartbeat: StreamHeartbeat;
  readonly #writer: OutboundWriter<relay.v1.IPushRequest>;
  #inFlight: InputSnapshot | undefined;
  /** The last snapshot the server accepted on this stream: the only base a delta may use. */
  #base: InputSnapshot | undefined;
  /** The server said (in its acks) it takes patches and relative provenance in deltas. */
  #takesPatches = false;
  /** The last snapshot sent or deliberately skipped on this stream. */
  #handled: InputSnapshot | undefined;
  #opened = false;
  #ended = false;

  constructor(options: PushStreamOptions) {
    this.#opts = options;
    this.#handled = options.refused;
    const method = RELAY_SERVICE.push;
    this.#call = options.client.makeBidiStreamRequest(method.path, method.requestSerialize, method.responseDeserialize);
    this.#writer = new OutboundWriter(this.#call, relayMessageBytes);
    this.#heartbeat = new StreamHeartbeat({
      intervalMs: options.heartbeatIntervalMs,
      timeoutMs: options.heartbeatTimeoutMs,
      // Behind a snapshot the server has not taken yet, a heartbeat says nothing new.
      send: () => {
        if (!this.#ended) this.#writer.writeIfIdle({ heartbeat: { sentUnixMs: Date.now() } });
      },
      onSilence: () => this.#end({ kind: 'silent', stream: 'push' }),
    });
    this.#call.on('metadata', () => this.#markOpen());
    this.#call.on('data', (msg: relay.v1.IPushResponse) => this.#receive(msg));
    // 'status' always follows an 'error' and carries the same code; it is the one place outcomes come from.
    this.#call.on('error', () => {});
    this.#call.on('status', (status: StatusObject) => this.#end(outcomeOfStatus(status, 'push')));
    const latest = options.latest();
    if (latest && options.acceptedByDeltaServers.has(latest)) this.#base = latest;
    this.offer();
  }

  /** Sends the newest snapshot if none is in flight and it was not sent on this stream yet. */
  offer(): void {
    if (this.#ended || this.#inFlight) return;
    const snapshot = this.#opts.latest();
    if (!snapshot || snapshot === this.#handled) return;
    this.#handled = snapshot;
    if (snapshot.bytes > this.#opts.maxSnapshotBytes) {
      this.#opts.logger.error(
        {
          cluster: snapshot.cluster,
          generation: snapshot.generation,
          hash: snapshot.hash,
          bytes: snapshot.bytes,
          limit: this.#opts.maxSnapshotBytes,
        },
        'input snapshot exceeds --max-snapshot-bytes; not pushed (the server keeps the previous one)',
      );
      return;
    }
    this.#inFlight = snapshot;
    this.#send(snapshot).catch((err: unknown) => {
      this.#inFlight = undefined;
      this.#opts.logger.error(
        { err, cluster: snapshot.cluster, generation: snapshot.generation },
        'input snapshot could not be framed; not pushed',
      );
    });
  }

  async #send(snapshot: InputSnapshot): Promise<void> {
    const { hash, resources, epoch, generation, bytes } = snapshot;
    const frames =
      this.#base === snapshot
        ? await resumeFrames(snapshot)
        : await encodeSnapshotFor(
            this.#base,
            { hash, resources, epoch, generation, bytes },
            { patches: this.#takesPatches },
          );
    if (this.#ended) return;
    this.#write({ header: frames.header });
    for (const chunk of frames.chunks) this.#write({ chunk });
    this.#opts.onSent(snapshot);
  }

  /** Cancels the stream; no outcome is reported after this. */
  close(): void {
    this.#ended = true;
    this.#heartbeat.stop();
    this.#call.cancel();
  }

  #receive(msg: relay.v1.IPushResponse): void {
    this.#heartbeat.heard();
    this.#markOpen();
    if (msg.goAway) {
      this.#end({
        kind: 'go-away',
        retryAfterMs: Number(msg.goAway.retryAfterMs ?? 0),
        reason: msg.goAway.reason ?? '',
      });
    } else if (msg.ack) {
      this.#handleAck(msg.ack);
    }
  }

  #handleAck(raw: relay.v1.IAck): void {
    const ack: PushAck = {
      hash: raw.hash ?? '',
      generation: Number(raw.generation ?? 0),
      accepted: raw.accepted === true,
      errorCode: raw.errorCode ?? '',
      message: raw.message ?? '',
      warnings: [...(raw.warnings ?? [])],
    };
    const snapshot = this.#inFlight;
    if (!snapshot) {
      this.#opts.logger.warn({ hash: ack.hash }, 'push ack with no snapshot in flight; ignored');
      return;
    }
    if (ack.hash !== snapshot.hash) {
      this.#opts.logger.warn(
        { cluster: snapshot.cluster, hash: snapshot.hash, ackHash: ack.hash },
        'push ack names another hash than the snapshot in flight',
      );
    }
    this.#inFlight = undefined;
    // A delta the server could not take (not its base, or past its patch limits) goes again full.
    if (
      !ack.accepted &&
      (ack.errorCode === 'MESHRELAY_ERR_DELTA_BASE_MISMATCH' || ack.errorCode === 'MESHRELAY_ERR_DELTA_LIMIT')
    ) {
      this.#opts.logger.warn(
        { cluster: snapshot.cluster, generation: snapshot.generation, code: ack.errorCode, reason: ack.message },
        ack.errorCode === 'MESHRELAY_ERR_DELTA_LIMIT'
          ? 'server refused the delta at a patch limit; resending the snapshot full'
          : 'server does not hold the delta base; resending the snapshot full',
      );
      this.#opts.acceptedByDeltaServers.delete(snapshot);
      this.#base = undefined;
      this.#handled = undefined;
    } else {
      // A server that does not say it takes deltas (an older one) gets every snapshot full.
      if (ack.accepted) this.#base = raw.acceptsDeltas === true ? snapshot : undefined;
      // Only a server that says so gets patches in its deltas.
      if (ack.accepted) this.#takesPatches = raw.acceptsPatches === true;
      if (this.#base === snapshot) this.#opts.acceptedByDeltaServers.add(snapshot);
      this.#opts.onAck(snapshot, ack);
    }
    this.offer();
  }

  #markOpen(): void {
    if (this.#opened || this.#ended) return;
    this.#opened = true;
    this.#opts.onOpen();
  }

  #write(message: relay.v1.IPushRequest): void {
    if (!this.#ended) this.#writer.write(message);
  }

  #end(outcome: SessionOutcome): void {
    if (this.#ended) return;
    this.close();
    this.#opts.onEnd(outcome);
  }
}
