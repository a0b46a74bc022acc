import { setTimeout as sleep } from 'node:timers/promises';
import { Client, status as GrpcStatus } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import {
  Backoff,
  fullJitter,
  MeshrelayError,
  type AssembledSnapshot,
  type BackoffOptions,
  type Clock,
  type InputSnapshot,
  type relay,
} from '@meshrelay/api';
import { createCsr } from '@meshrelay/certs';
import { needsRenewal, type ClientCredentials, type CredentialStore } from '../credentials/credential-store.ts';
import type { AppliedOutput } from '../apply/output-writer.ts';
import { PullStream, type ReceivedOutput } from './pull-stream.ts';
import { PushStream, type PushAck } from './push-stream.ts';
import { waitOrReachable } from './reachability.ts';
import { RELAY_CHANNEL_OPTIONS, mtlsCredentials, registerCluster, renewCertificate } from './relay-rpc.ts';
import { describeOutcome, outcomeOfError, type SessionOutcome } from './session-outcome.ts';

export interface RelayClientOptions {
  readonly cluster: string;
  /** host:port of each management server, tried in order and rotated on every failure and go-away. */
  readonly serverAddresses: readonly string[];
  /** The bootstrap relay root CA (PEM), or undefined when none is configured. */
  readonly rootCaPem: () => Promise<string | undefined>;
  /** The relay identity token, or undefined when none is configured. */
  readonly token: () => Promise<string | undefined>;
  readonly credentials: CredentialStore;
  readonly latestSnapshot: () => InputSnapshot | undefined;
  /** The output currently held and served, if any (announced to the server on every Pull). */
  readonly heldOutput: () => AppliedOutput | undefined;
  /** Applies one complete output; rejection = refused (acked with accepted=false). */
  readonly applyOutput: (output: AssembledSnapshot) => Promise<void>;
  /** Receives each resource-status report of this cluster's Gloo resources (must not throw). */
  readonly applyStatuses?: (statuses: relay.v1.IResourceStatuses) => void;
  readonly heartbeatIntervalMs: number;
  readonly heartbeatTimeoutMs: number;
  readonly maxSnapshotBytes: number;
  readonly maxOutputResources?: number;
  readonly logger: Logger;
  readonly backoff?: BackoffOptions;
  readonly now?: Clock;
  /** Least wait after being fenced by a newer agent (default 30 s). */
  readonly fencedBackoffMs?: number;
  /** A connection that lasted this long resets the backoff (default 10 s). */
  readonly healthyAfterMs?: number;
  /**
   * While waiting out a backoff after losing every server, how often to probe
   * whether one is reachable again (default 1 s); a server coming back ends the
   * wait, and the server's admit pacing spreads the reconnects.
   */
  readonly reachabilityProbeMs?: number;
  /** How often the certificate's remaining lifetime is checked (default 60 s). */
  readonly renewCheckIntervalMs?: number;
  /** Deadline of Register and Renew calls (default 10 s). */
  readonly rpcTimeoutMs?: number;
  readonly events?: RelayClientEvents;
}

/** Hooks for metrics and readiness; called synchronously, must not throw. */
export interface RelayClientEvents {
  onConnectionChange?(status: RelayClientStatus): void;
  onSnapshotPushed?(snapshot: InputSnapshot): void;
  onSnapshotAcked?(snapshot: InputSnapshot, ack: PushAck): void;
  /** An output arrived complete (before it is applied): its kind and the bytes it took on the wire. */
  onOutputReceived?(received: ReceivedOutput): void;
  /** A Pull stream opened (the server answered it): per-stream reports start over. */
  onPullOpen?(): void;
}

export interface PushRecord {
  readonly generation: number;
  readonly hash: string;
  readonly atUnixMs: number;
}

export interface RelayClientStatus {
  /** The server both streams talk to, or undefined while disconnected. */
  readonly address: string | undefined;
  readonly pushConnected: boolean;
  readonly pullConnected: boolean;
  readonly lastPushed: PushRecord | undefined;
  readonly lastAcked:
    (PushRecord & { readonly accepted: boolean; readonly errorCode: string; readonly message: string }) | undefined;
  /** True once any snapshot was acked as accepted by a server. */
  readonly everAccepted: boolean;
  readonly certificateNotAfter: string | undefined;
  readonly lastError: string | undefined;
}

const DEFAULT_MAX_OUTPUT_RESOURCES = 200_000;

/**
 * The agent's side of the relay: registers (token + CSR over server-only TLS),
 * then keeps one Push and one Pull stream open over mTLS to one management
 * server, with heartbeats, go-away handling, certificate renewal and
 * reconnection with full-jitter backoff across the configured addresses.
 */
export class RelayClient {
  readonly #opts: RelayClientOptions;
  readonly #now: Clock;
  readonly #backoff: Backoff;
  #abort = new AbortController();
  /** False after stop(): a start() queued behind a stopping loop then does not run. */
  #wanted = false;
  #creds: ClientCredentials | undefined;
  #addressIndex = 0;
  #lastRenewAttempt = Number.NEGATIVE_INFINITY;
  #renewing = false;
  #loop: Promise<void> | undefined;
  #endSession: ((outcome: SessionOutcome) => void) | undefined;
  #push: PushStream | undefined;
  #pull: PullStream | undefined;
  #pullOpen = false;
  /** The mTLS channel of the session whose streams are open, for unary calls beside them (MeshTrust). */
  #channel: Client | undefined;
  /** The last snapshot a server refused; new streams do not send it again. */
  #refused: InputSnapshot | undefined;
  /** Snapshots a server that takes deltas accepted, on any of this client's streams (a new one resumes them). */
  readonly #acceptedByDeltaServers = new WeakSet<InputSnapshot>();
  #status: RelayClientStatus = {
    address: undefined,
    pushConnected: false,
    pullConnected: false,
    lastPushed: undefined,
    lastAcked: undefined,
    everAccepted: false,
    certificateNotAfter: undefined,
    lastError: undefined,
  };

  constructor(options: RelayClientOptions) {
    if (options.serverAddresses.length === 0)
      throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', '--server-address: no address given');
    this.#opts = options;
    this.#now = options.now ?? Date.now;
    this.#backoff = new Backoff(options.backoff);
  }

  get status(): RelayClientStatus {
    return this.#status;
  }

  /** The open session's mTLS channel, or undefined while there is none. */
  get channel(): Client | undefined {
    return this.#channel;
  }

  /**
   * Sends `report` on the open Pull stream; false when none is open (the caller sends
   * again when the next one opens: see RelayClientEvents.onPullOpen).
   */
  sendDataPlane(report: relay.v1.IDataPlaneReport): boolean {
    if (this.#pull === undefined || !this.#pullOpen) return false;
    this.#pull.sendDataPlane(report);
    return true;
  }

  /** Sends the hosts in use on the open Pull stream (see InterestTracker); false when none is open. */
  sendInterest(report: relay.v1.IInterestReport): boolean {
    if (this.#pull === undefined || !this.#pullOpen) return false;
    this.#pull.sendInterest(report);
    return true;
  }

  /**
   * Starts the connect loop in the background; idempotent. May be called again
   * after stop() (a new leadership term): the new loop begins once the old one
   * has ended, and reads the client certificate from the credential store
   * again, since another replica sharing the state dir may have renewed it.
   */
  start(): void {
    this.#wanted = true;
    if (this.#loop && !this.#abort.signal.aborted) return;
    this.#loop = (this.#loop ?? Promise.resolve()).then(async () => {
      if (!this.#wanted) return;
      this.#abort = new AbortController();
      this.#creds = undefined;
      this.#backoff.reset();
      await this.#run();
    });
  }

  /** Closes the streams and ends the loop; resolves once everything is closed. */
  async stop(): Promise<void> {
    this.#wanted = false;
    this.#abort.abort();
    this.#endSession?.({ kind: 'stopped' });
    await this.#loop;
  }

  /** Tells the push stream that a newer snapshot may be available. */
  snapshotAvailable(): void {
    this.#push?.offer();
  }

  async #run(): Promise<void> {
    while (!this.#abort.signal.aborted) {
      const address = this.#opts.serverAddresses[this.#addressIndex] as string;
      const started = this.#now();
      const outcome = await this.#connect(address);
      if (outcome.kind === 'stopped' || this.#abort.signal.aborted) break;
      const delay = await this.#decideNext(outcome, this.#now() - started);
      this.#setStatus({ lastError: outcome.kind === 'renewed' ? this.#status.lastError : describeOutcome(outcome) });
      if (outcome.kind === 'failed' || outcome.kind === 'silent') await this.#waitForServer(delay);
      else if (delay > 0) await sleep(delay, undefined, { signal: this.#abort.signal }).catch(() => undefined);
    }
  }

  /**
   * Waits out a backoff after a lost connection, ending early when a server that
   * was unreachable answers again: then the backoff starts over and the agent
   * reconnects after a short spread, instead of sitting out the backoff tail.
   */
  async #waitForServer(delayMs: number): Promise<void> {
    const probeIntervalMs = this.#opts.reachabilityProbeMs ?? 1000;
    const result = await waitOrReachable({
      addresses: this.#opts.serverAddresses,
      delayMs,
      probeIntervalMs,
      signal: this.#abort.signal,
    });
    if (result.kind !== 'reachable' || this.#abort.signal.aborted) return;
    this.#backoff.reset();
    this.#addressIndex = result.index;
    const spreadMs = fullJitter(probeIntervalMs);
    this.#opts.logger.info(
      { cluster: this.#opts.cluster, address: this.#opts.serverAddresses[result.index], skippedMs: delayMs, spreadMs },
      'relay server reachable again; reconnecting without waiting out the backoff',
    );
    await sleep(spreadMs, undefined, { signal: this.#abort.signal }).catch(() => undefined);
  }

  async #connect(address: string): Promise<SessionOutcome> {
    let creds: ClientCredentials;
    try {
      creds = await this.#ensureCredentials(address);
    } catch (err) {
      return this.#registrationFailure(address, err);
    }
    try {
      return await this.#runSession(address, creds);
    } catch (err) {
      return outcomeOfError(err);
    }
  }

  /** Picks the wait before the next attempt and the address to use; resets or grows the backoff. */
  async #decideNext(outcome: SessionOutcome, lastedMs: number): Promise<number> {
    if (lastedMs >= (this.#opts.healthyAfterMs ?? 10_000)) this.#backoff.reset();
    const log = this.#opts.logger;
    const fields = { cluster: this.#opts.cluster, address: this.#opts.serverAddresses[this.#addressIndex] };
    if (outcome.kind === 'renewed') return 0;
    this.#addressIndex = (this.#addressIndex + 1) % this.#opts.serverAddresses.length;
    let delay: number;
    switch (outcome.kind) {
      case 'go-away':
        // The server's hint is honoured (it spreads a crowd itself), plus a little jitter;
        // a go-away does not grow the backoff of connection failures.
        delay = goAwayDelayMs(outcome.retryAfterMs, this.#backoff.ceilingMs());
        log.info(
          { ...fields, delayMs: delay, reason: outcome.reason },
          `server sent go-away; moving to the next address`,
        );
        return delay;
      case 'fenced':
        delay = Math.max(this.#opts.fencedBackoffMs ?? 30_000, this.#backoff.nextDelayMs());
        log.error(
          { ...fields, delayMs: delay },
          `FENCED: a newer agent for cluster ${this.#opts.cluster} took over; this agent stands back (${outcome.message})`,
        );
        return delay;
      case 'unauthenticated':
        this.#creds = undefined;
        await this.#opts.credentials.drop();
        delay = this.#backoff.nextDelayMs();
        log.error(
          { ...fields, delayMs: delay },
          `${describeOutcome(outcome)}; dropping the client certificate and registering again`,
        );
        return delay;
      default:
        delay = this.#backoff.nextDelayMs();
        log.warn({ ...fields, delayMs: delay }, `relay connection ended: ${describeOutcome(outcome)}`);
        return delay;
    }
  }

  async #ensureCredentials(address: string): Promise<ClientCredentials> {
    if (this.#creds) return this.#creds;
    const loaded = await this.#opts.credentials.load();
    if (loaded) return this.#useCredentials(loaded);
    const rootCaPem = await this.#opts.rootCaPem();
    if (!rootCaPem)
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_CONFIG',
        'no client certificate yet and no --root-ca-file to register with',
      );
    const token = await this.#opts.token();
    if (!token)
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_CONFIG',
        'no client certificate yet and no --token or --token-file to register with',
      );
    const keyPair = await this.#opts.credentials.keyPair();
    const csrPem = createCsr({ ...keyPair, cluster: this.#opts.cluster });
    this.#opts.logger.info({ cluster: this.#opts.cluster, address }, 'registering with the relay token');
    const issued = await registerCluster({
      address,
      rootCaPem,
      cluster: this.#opts.cluster,
      token,
      csrPem,
      timeoutMs: this.#opts.rpcTimeoutMs ?? 10_000,
    });
    const creds = await this.#opts.credentials.save(issued.certificatePem, issued.caBundlePem);
    this.#opts.logger.info(
      { cluster: this.#opts.cluster, address, notAfter: new Date(creds.notAfterMs).toISOString() },
      'registered; client certificate issued',
    );
    return this.#useCredentials(creds);
  }

  #useCredentials(creds: ClientCredentials): ClientCredentials {
    this.#creds = creds;
    this.#setStatus({ certificateNotAfter: new Date(creds.notAfterMs).toISOString() });
    return creds;
  }

  #registrationFailure(address: string, err: unknown): SessionOutcome {
    const outcome = outcomeOfError(err);
    const code = (err as { code?: unknown }).code;
    const fields = { cluster: this.#opts.cluster, address, err };
    if (code === GrpcStatus.UNAUTHENTICATED) {
      this.#opts.logger.error(
        fields,
        'registration refused: the relay token is wrong, expired or rotated out (issue a new one with `meshctl cluster register`)',
      );
    } else if (code === GrpcStatus.RESOURCE_EXHAUSTED) {
      this.#opts.logger.error(fields, 'registration rate limited by the server; backing off');
    } else {
      this.#opts.logger.error(fields, `registration failed: ${describeOutcome(outcome)}`);
    }
    // Not 'unauthenticated': there is no certificate to drop, only a token to wait for.
    return outcome.kind === 'unauthenticated'
      ? { kind: 'failed', code: GrpcStatus.UNAUTHENTICATED, message: outcome.message }
      : outcome;
  }

  async #runSession(address: string, creds: ClientCredentials): Promise<SessionOutcome> {
    const client = new Client(address, mtlsCredentials(creds, await this.#opts.rootCaPem()), RELAY_CHANNEL_OPTIONS);
    let resolveEnd!: (outcome: SessionOutcome) => void;
    const ended = new Promise<SessionOutcome>((resolve) => (resolveEnd = resolve));
    let done = false;
    const finish = (outcome: SessionOutcome): void => {
      if (done) return;
      done = true;
      resolveEnd(outcome);
    };
    this.#endSession = finish;
    let pull: PullStream | undefined;
    let renewTimer: NodeJS.Timeout | undefined;
    try {
      if (this.#abort.signal.aborted) return { kind: 'stopped' };
      // At most one attempt per check interval: a server that issues short certificates must not cause a renew loop.
      if (
        needsRenewal(creds, this.#now()) &&
        this.#now() - this.#lastRenewAttempt >= (this.#opts.renewCheckIntervalMs ?? 60_000)
      ) {
        const renewed = await this.#renew(client);
        if (renewed) return renewed;
      }
      this.#push = this.#openPush(client, address, finish);
      pull = this.#openPull(client, address, finish);
      this.#pull = pull;
      this.#channel = client;
      renewTimer = setInterval(() => {
        if (this.#creds && needsRenewal(this.#creds, this.#now())) void this.#renew(client).then((o) => o && finish(o));
      }, this.#opts.renewCheckIntervalMs ?? 60_000);
      return await ended;
    } finally {
      clearInterval(renewTimer);
      this.#endSession = undefined;
      this.#channel = undefined;
      this.#push?.close();
      this.#push = undefined;
      this.#pull = undefined;
      this.#pullOpen = false;
      pull?.close();
      await pull?.settled();
      client.close();
      this.#setStatus({ address: undefined, pushConnected: false, pullConnected: false });
    }
  }

  #openPush(client: Client, address: string, finish: (o: SessionOutcome) => void): PushStream {
    return new PushStream({
      client,
      latest: this.#opts.latestSnapshot,
      ...(this.#refused ? { refused: this.#refused } : {}),
      heartbeatIntervalMs: this.#opts.heartbeatIntervalMs,
      heartbeatTimeoutMs: this.#opts.heartbeatTimeoutMs,
      maxSnapshotBytes: this.#opts.maxSnapshotBytes,
      logger: this.#opts.logger,
      onOpen: () => this.#setStatus({ address, pushConnected: true }),
      onSent: (snapshot) => {
        this.#setStatus(
          { lastPushed: { generation: snapshot.generation, hash: snapshot.hash, atUnixMs: this.#now() } },
          false,
        );
        this.#opts.events?.onSnapshotPushed?.(snapshot);
      },
      onAck: (snapshot, ack) => this.#recordAck(snapshot, ack, address),
      onEnd: finish,
      acceptedByDeltaServers: this.#acceptedByDeltaServers,
    });
  }

  #openPull(client: Client, address: string, finish: (o: SessionOutcome) => void): PullStream {
    return new PullStream({
      client,
      held: this.#opts.heldOutput,
      apply: this.#opts.applyOutput,
      limits: {
        maxBytes: this.#opts.maxSnapshotBytes,
        maxResources: this.#opts.maxOutputResources ?? DEFAULT_MAX_OUTPUT_RESOURCES,
      },
      heartbeatIntervalMs: this.#opts.heartbeatIntervalMs,
      heartbeatTimeoutMs: this.#opts.heartbeatTimeoutMs,
      logger: this.#opts.logger,
      onOpen: () => {
        this.#pullOpen = true;
        this.#setStatus({ address, pullConnected: true });
        this.#opts.events?.onPullOpen?.();
      },
      ...(this.#opts.applyStatuses ? { onStatuses: this.#opts.applyStatuses } : {}),
      onReceived: (received) => this.#opts.events?.onOutputReceived?.(received),
      onEnd: finish,
    });
  }

  #recordAck(snapshot: InputSnapshot, ack: PushAck, address: string): void {
    const fields = { cluster: snapshot.cluster, generation: snapshot.generation, hash: snapshot.hash, address };
    if (ack.accepted) {
      this.#refused = undefined;
      this.#opts.logger.info({ ...fields, warnings: ack.warnings }, 'snapshot acked');
    } else {
      this.#refused = snapshot;
      this.#opts.logger.error(
        { ...fields, errorCode: ack.errorCode },
        `snapshot rejected by the server: ${ack.errorCode}: ${ack.message}; the server keeps the previous one, and this one is not sent again (waiting for a new snapshot)`,
      );
    }
    const lastAcked = {
      generation: snapshot.generation,
      hash: snapshot.hash,
      atUnixMs: this.#now(),
      accepted: ack.accepted,
      errorCode: ack.errorCode,
      message: ack.message,
    };
    this.#setStatus({ lastAcked, everAccepted: this.#status.everAccepted || ack.accepted }, false);
    this.#opts.events?.onSnapshotAcked?.(snapshot, ack);
  }

  /**
   * Renews the client certificate over `client`; returns the outcome that ends the session, or undefined to carry on.
   */
  async #renew(client: Client): Promise<SessionOutcome | undefined> {
    if (this.#renewing) return undefined;
    this.#renewing = true;
    this.#lastRenewAttempt = this.#now();
    try {
      const keyPair = await this.#opts.credentials.keyPair();
      const issued = await renewCertificate(
        client,
        createCsr({ ...keyPair, cluster: this.#opts.cluster }),
        this.#opts.rpcTimeoutMs ?? 10_000,
      );
      const creds = await this.#opts.credentials.save(
        issued.certificatePem,
        issued.caBundlePem || (this.#creds?.caBundlePem ?? ''),
      );
      this.#useCredentials(creds);
      this.#opts.logger.info(
        { cluster: this.#opts.cluster, notAfter: new Date(creds.notAfterMs).toISOString() },
        'client certificate renewed; reconnecting with it',
      );
      return { kind: 'renewed' };
    } catch (err) {
      const outcome = outcomeOfError(err);
      if (outcome.kind === 'unauthenticated') return outcome;
      this.#opts.logger.warn(
        { cluster: this.#opts.cluster, err },
        `certificate renewal failed (${describeOutcome(outcome)}); will retry`,
      );
      return undefined;
    } finally {
      this.#renewing = false;
    }
  }

  #setStatus(patch: Partial<RelayClientStatus>, notify = true): void {
    this.#status = { ...this.#status, ...patch };
    if (notify) this.#opts.events?.onConnectionChange?.(this.#status);
  }
}

/**
 * Wait after a go-away: at least the hint (never 0, so a server cannot cause a tight loop), plus jitter up to a quarter
 * of it.
 */
function goAwayDelayMs(retryAfterMs: number, backoffCeilingMs: number): number {
  const hint = Math.max(retryAfterMs, 50);
  return hint + fullJitter(Math.min(hint / 4, backoffCeilingMs));
}
