import type { Client, ClientDuplexStream, StatusObject } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import {
  OutboundWriter,
  RELAY_SERVICE,
  SnapshotAssembler,
  StreamHeartbeat,
  relayMessageBytes,
  copyProvenance,
  rememberReceivedEncodings,
  resolveDelta,
  resourceId,
  snapshotWireBytes,
  toMeshrelayError,
  type AssembledSnapshot,
  type AssemblyLimits,
  type Provenance,
  type Resource,
  type relay,
} from '@meshrelay/api';
import { outcomeOfStatus, type SessionOutcome } from './session-outcome.ts';

export interface PullStreamOptions {
  readonly client: Client;
  /** The output already held (undefined if none), announced in PullHello. */
  readonly held: () =>
    | { readonly hash: string; readonly resources: readonly Resource[]; readonly provenance: readonly Provenance[] }
    | undefined;
  /** Applies a complete, hash-checked output; resolves once it is served. Rejection = not applied. */
  readonly apply: (output: AssembledSnapshot) => Promise<void>;
  readonly limits: AssemblyLimits;
  readonly heartbeatIntervalMs: number;
  readonly heartbeatTimeoutMs: number;
  readonly logger: Logger;
  readonly onOpen: () => void;
  /** Called with each resource-status report the server sends (beside outputs, never inside one). */
  readonly onStatuses?: (statuses: relay.v1.IResourceStatuses) => void;
  /** Called when an output's last chunk arrived, before it is resolved and applied (must not throw). */
  readonly onReceived?: (received: ReceivedOutput) => void;
  /** Called once, with why the stream ended. */
  readonly onEnd: (outcome: SessionOutcome) => void;
}

/** One output as it came over the wire. */
export interface ReceivedOutput {
  /** The announced hash (for a delta: of the result). */
  readonly hash: string;
  readonly kind: 'full' | 'delta';
  /** Resources a delta changed by RFC 6902 patch (0 for a full output and for whole-resource deltas). */
  readonly patches: number;
  /** Encoded header plus chunk payload, as the server's relay_snapshot_bytes_total counts them. */
  readonly wireBytes: number;
}

type PullCall = ClientDuplexStream<relay.v1.IPullRequest, relay.v1.IPullResponse>;

/**
 * One Relay.Pull stream: announces the held output, reassembles each output the
 * server sends, applies it (one at a time, in order) and acks it. A snapshot
 * that cannot be assembled or applied is acked with accepted=false and the
 * previous output stays in place.
 */
export class PullStream {
  readonly #opts: PullStreamOptions;
  readonly #call: PullCall;
  readonly #heartbeat: StreamHeartbeat;
  readonly #writer: OutboundWriter<relay.v1.IPullRequest>;
  #assembler: SnapshotAssembler | undefined;
  #applying: Promise<void> = Promise.resolve();
  #opened = false;
  #ended = false;

  constructor(options: PullStreamOptions) {
    this.#opts = options;
    const method = RELAY_SERVICE.pull;
    this.#call = options.client.makeBidiStreamRequest(method.path, method.requestSerialize, method.responseDeserialize);
    this.#writer = new OutboundWriter(this.#call, relayMessageBytes);
    this.#heartbeat = new StreamHeartbeat({
      intervalMs: options.heartbeatIntervalMs,
      timeoutMs: options.heartbeatTimeoutMs,
      send: () => {
        if (!this.#ended) this.#writer.writeIfIdle({ heartbeat: { sentUnixMs: Date.now() } });
      },
      onSilence: () => this.#end({ kind: 'silent', stream: 'pull' }),
    });
    this.#call.on('metadata', () => this.#markOpen());
    this.#call.on('data', (msg: relay.v1.IPullResponse) => this.#receive(msg));
    this.#call.on('error', () => {});
    this.#call.on('status', (status: StatusObject) => this.#end(outcomeOfStatus(status, 'pull')));
    // The held output's identity lets the server's blast-radius guard see what a new output would delete.
    const held = options.held();
    this.#write({
      hello: {
        heldHash: held?.hash ?? '',
        heldKeys: held ? held.resources.map(resourceId) : [],
        heldProvenance: held ? held.provenance.map(copyProvenance) : [],
        acceptsDeltas: true,
        acceptsPatches: true,
      },
    });
  }

  /** Cancels the stream; no outcome is reported after this. An apply in progress completes. */
  close(): void {
    this.#ended = true;
    this.#heartbeat.stop();
    this.#call.cancel();
  }

  /** Tells the server what the agent's xDS server sees (see DataPlaneReporter). */
  sendDataPlane(report: relay.v1.IDataPlaneReport): void {
    this.#write({ dataPlane: report });
  }

  /** Tells the server which hosts the cluster uses (see InterestTracker). */
  sendInterest(report: relay.v1.IInterestReport): void {
    this.#write({ interest: report });
  }

  /** Resolves once every output received so far has been applied (or refused). */
  settled(): Promise<void> {
    return this.#applying;
  }

  #receive(msg: relay.v1.IPullResponse): void {
    this.#heartbeat.heard();
    this.#markOpen();
    if (msg.goAway) {
      this.#end({
        kind: 'go-away',
        retryAfterMs: Number(msg.goAway.retryAfterMs ?? 0),
        reason: msg.goAway.reason ?? '',
      });
    } else if (msg.header) {
      this.#startAssembly(msg.header);
    } else if (msg.chunk) {
      this.#addChunk(msg.chunk);
    } else if (msg.statuses) {
      this.#opts.onStatuses?.(msg.statuses);
    }
  }

  #startAssembly(header: relay.v1.ISnapshotHeader): void {
    if (this.#assembler) {
      this.#opts.logger.warn(
        { hash: this.#assembler.header.hash },
        'output header arrived before the previous output was complete; discarding the partial one',
      );
    }
    this.#assembler = undefined;
    try {
      this.#assembler = new SnapshotAssembler(header, this.#opts.limits);
    } catch (err) {
      this.#refuse(header.hash ?? '', err);
    }
  }

  #addChunk(chunk: relay.v1.ISnapshotChunk): void {
    const assembler = this.#assembler;
    // Chunks of a refused header are dropped until the next header.
    if (!assembler) return;
    try {
      if (!assembler.add(chunk)) return;
    } catch (err) {
      this.#assembler = undefined;
      this.#refuse(assembler.header.hash ?? '', err);
      return;
    }
    this.#assembler = undefined;
    this.#opts.onReceived?.({
      hash: assembler.header.hash ?? '',
      kind: assembler.header.baseHash ? 'delta' : 'full',
      patches: assembler.header.patches?.length ?? 0,
      wireBytes: snapshotWireBytes(assembler.header, assembler.receivedBytes),
    });
    this.#applying = this.#applying.then(async () => {
      let output: AssembledSnapshot;
      try {
        // A delta applies to the output held now, after every earlier one was applied.
        output = await resolveDelta(await assembler.finish(), this.#opts.held(), this.#opts.limits);
        // A full output is the base of the next delta: keep each resource's received text as its encoding now.
        if (output.texts) await rememberReceivedEncodings(output.resources, output.texts);
      } catch (err) {
        this.#refuse(assembler.header.hash ?? '', err);
        return;
      }
      try {
        await this.#opts.apply(output);
        this.#write({ ack: { hash: output.hash, accepted: true } });
      } catch (err) {
        this.#refuse(output.hash, err);
      }
    });
  }

  #refuse(hash: string, err: unknown): void {
    const error = toMeshrelayError(err);
    this.#opts.logger.error({ err: error, hash }, `output refused: ${error.code}: ${error.message}`);
    this.#write({ ack: { hash, accepted: false, errorCode: error.code, message: error.message } });
  }

  #markOpen(): void {
    if (this.#opened || this.#ended) return;
    this.#opened = true;
    this.#opts.onOpen();
  }

  #write(message: relay.v1.IPullRequest): void {
    if (!this.#ended) this.#writer.write(message);
  }

  #end(outcome: SessionOutcome): void {
    if (this.#ended) return;
    this.close();
    this.#opts.onEnd(outcome);
  }
}
