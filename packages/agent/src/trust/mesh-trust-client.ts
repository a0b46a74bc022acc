import { status as GrpcStatus } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { Resource, relay } from '@meshrelay/api';
import { createIntermediateCsr } from '@meshrelay/certs';
import { checkCacerts, type Cacerts, type CacertsStore } from './cacerts.ts';
import { trustDomainOf, workloadIdentitiesOf } from './identities.ts';
import type { TrustMetrics } from './trust-metrics.ts';
import { cacertsFor, checkTarget, renewalReason, type TrustTarget } from './trust-target.ts';
import type { WorkloadIssuer } from './workload-issuer.ts';
import type { WorkloadIdentity } from './workload-cert-files.ts';

export interface MeshTrustClientOptions {
  readonly cluster: string;
  readonly store: CacertsStore;
  readonly issuer: WorkloadIssuer;
  /** One MeshTrust call on the relay's open mTLS session; undefined when no session is open. */
  readonly call: (request: relay.v1.IMeshTrustRequest) => Promise<relay.v1.IMeshTrustResponse> | undefined;
  /** The resources discovered in the cluster (Pods, the mesh config), or undefined before the first scan. */
  readonly discovered: () => readonly Resource[] | undefined;
  /** How often the management plane is asked (`--trust-interval`). */
  readonly intervalMs: number;
  /** How often local work (workload renewals) is checked against the clock (default min(1 s, intervalMs)). */
  readonly tickMs?: number;
  readonly logger: Logger;
  readonly metrics?: TrustMetrics;
  readonly now?: () => number;
  /** Called after every step (enablement and the held intermediate may have changed); must not throw. */
  readonly onStep?: () => void;
}

export type TrustStage = 'load' | 'call' | 'response' | 'intermediate' | 'cacerts' | 'workloads';

/** What /status shows of mesh trust. */
export interface MeshTrustStatus {
  /** undefined until the management plane answered once; false when no RootTrustPolicy is in force. */
  readonly enabled: boolean | undefined;
  readonly cacerts: string;
  readonly generation: number;
  readonly phase: number;
  readonly appliedGeneration: number;
  readonly signingRootId: string | undefined;
  readonly intermediate: { readonly signingRootId: string; readonly notAfter: string } | undefined;
  readonly workloadCerts: number;
  readonly lastError: { readonly stage: TrustStage; readonly message: string; readonly at: string } | undefined;
}

/** Rounds of call-write-report in one tick: a write is reported at once, without waiting for the interval. */
const MAX_ROUNDS_PER_TICK = 3;

class StageError extends Error {
  readonly stage: TrustStage;
  constructor(stage: TrustStage, cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.stage = stage;
  }
}

/** `pending`, or a rejection as soon as `signal` aborts. */
function untilHalted<T>(pending: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('stopped'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new Error('stopped'));
    signal.addEventListener('abort', onAbort, { once: true });
    pending.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

async function stage<T>(name: TrustStage, work: () => Promise<T> | T): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw err instanceof StageError ? err : new StageError(name, err);
  }
}

/**
 * The agent's side of mesh trust. Loads `cacerts` at start (so the last good intermediate keeps issuing workload
 * certificates while the management plane is away), then on wall-clock ticks: asks MeshTrust every interval while
 * a relay session is open, writes the bundle it is given, renews the intermediate (a new key, a CSR; the key
 * never leaves) when the signing root changes, the trust domain changes or the grace point passed, keeps the
 * workload certificates current, and reports the generation it applied once bundle AND intermediate are written.
 * Anything wrong in an answer writes nothing: the previous cacerts stay, the error shows in status, log, metric.
 */
export class MeshTrustClient {
  readonly #opts: MeshTrustClientOptions;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #loaded = false;
  #held: Cacerts | undefined;
  #target: TrustTarget | undefined;
  #enabled: boolean | undefined;
  #applied = 0;
  #nextCallAt = 0;
  #pending: { trustDomain: string; csrPem: string; keyPem: string } | undefined;
  #lastError: MeshTrustStatus['lastError'];
  /** What the discovered resources say, worked out again only when they change. */
  #discovered: { from: readonly Resource[]; ids: WorkloadIdentity[]; trustDomain: string } | undefined;
  #nextLoadAt = 0;
  #unimplementedLogged = false;
  #halt = new AbortController();

  constructor(options: MeshTrustClientOptions) {
    this.#opts = options;
    this.#now = options.now ?? Date.now;
  }

  get status(): MeshTrustStatus {
    return {
      enabled: this.#enabled,
      cacerts: this.#opts.store.description,
      generation: this.#target?.generation ?? 0,
      phase: this.#target?.phase ?? 0,
      appliedGeneration: this.#applied,
      signingRootId: this.#target?.signingRootId,
      intermediate: this.#held && {
        signingRootId: this.#held.signingRootId,
        notAfter: this.#held.notAfter.toISOString(),
      },
      workloadCerts: this.#opts.issuer.count,
      lastError: this.#lastError,
    };
  }

  /** Loads cacerts and issues workload certificates from it, then ticks; idempotent. */
  async start(): Promise<void> {
    if (this.#timer !== undefined) return;
    this.#halt = new AbortController();
    // Each leadership term reads cacerts again: another replica may have renewed it meanwhile.
    this.#loaded = false;
    this.#nextLoadAt = 0;
    const tickMs = this.#opts.tickMs ?? Math.min(1000, this.#opts.intervalMs);
    this.#timer = setInterval(() => void this.#tick(), tickMs);
    await this.#tick();
  }

  /** Stops ticking and waits for a step under way. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    // A call in flight is not waited for (a replica that stops leading must let go at once), and nothing is
    // written after this point.
    this.#halt.abort();
    await this.#running;
  }

  /** Asks the management plane at the next tick instead of after the interval (e.g. a session just opened). */
  callSoon(): void {
    this.#nextCallAt = 0;
  }

  #tick(): Promise<void> {
    if (this.#running) return this.#running;
    this.#running = this.#step()
      .catch((err: unknown) => this.#failed(err))
      .finally(() => {
        this.#running = undefined;
        this.#updateMetrics();
        this.#opts.onStep?.();
      });
    return this.#running;
  }

  async #step(): Promise<void> {
    if (!this.#loaded) {
      // A store that cannot be read (e.g. the API server refuses) is tried again at the interval, not every tick.
      if (this.#now() < this.#nextLoadAt) return;
      this.#nextLoadAt = this.#now() + this.#opts.intervalMs;
      await stage('load', () => this.#load());
    }
    await this.#reconcileWorkloads();
    for (let round = 0; round < MAX_ROUNDS_PER_TICK && this.#now() >= this.#nextCallAt; round++) {
      if (!(await this.#exchange())) break;
    }
  }

  async #load(): Promise<void> {
    const files = await this.#opts.store.load();
    this.#loaded = true;
    // What is stored is what counts: removed or broken, a new intermediate is requested.
    this.#held = undefined;
    if (files === undefined) return;
    try {
      this.#held = checkCacerts(files, new Date(this.#now()));
      this.#opts.logger.info(
        {
          cacerts: this.#opts.store.description,
          signingRootId: this.#held.signingRootId,
          notAfter: this.#held.notAfter,
        },
        'intermediate CA loaded from cacerts',
      );
    } catch (err) {
      // Unusable: a new intermediate is requested, and the files are replaced only by a checked one.
      this.#record('load', err);
    }
  }

  /**
   * One call, and what it asks; true when something was written (so the result is reported at once), false when
   * there is nothing more to do now.
   */
  async #exchange(): Promise<boolean> {
    const now = this.#now();
    this.#nextCallAt = now + this.#opts.intervalMs;
    const trustDomain = this.#trustDomain();
    const answer = await this.#ask('');
    if (answer === undefined || !answer.enabled) return false;
    let target = await stage('response', () => checkTarget(answer));
    let wrote = false;
    const reason = renewalReason(this.#held, target, trustDomain, now);
    if (reason !== undefined) {
      const signed = await this.#renew(target, trustDomain, reason);
      if (signed === undefined) return false;
      target = signed;
      wrote = true;
    } else if (this.#held !== undefined && this.#held.files['root-cert.pem'] !== target.bundle) {
      const held = this.#held;
      const next = await stage('response', () =>
        checkCacerts({ ...held.files, 'root-cert.pem': target.bundle }, new Date(now)),
      );
      await this.#write(next);
      wrote = true;
    }
    this.#target = target;
    // The workload files carry the bundle too: they are current before the generation is reported.
    if (wrote) await this.#reconcileWorkloads();
    const changed = this.#applied !== target.generation;
    this.#applied = target.generation;
    this.#lastError = undefined;
    if (wrote || changed) this.#nextCallAt = now;
    if (wrote) this.#opts.logger.info({ generation: target.generation, phase: target.phase }, 'mesh trust applied');
    return wrote || changed;
  }

  /** A new key and CSR (reused only to retry the same renewal), signed; the checked result written. */
  async #renew(target: TrustTarget, trustDomain: string, reason: string): Promise<TrustTarget | undefined> {
    const { cluster, logger } = this.#opts;
    if (this.#pending?.trustDomain !== trustDomain) {
      const csr = await stage('intermediate', () =>
        createIntermediateCsr({
          cluster,
          trustDomain,
          ...(target.orgName !== '' ? { orgName: target.orgName } : {}),
          ...(target.rsaKeyBits > 0 ? { rsaKeyBits: target.rsaKeyBits } : {}),
        }),
      );
      this.#pending = { trustDomain, ...csr };
    }
    const pending = this.#pending;
    logger.info({ cluster, reason, signingRootId: target.signingRootId }, 'requesting a new intermediate CA');
    let answer: relay.v1.IMeshTrustResponse | undefined;
    try {
      answer = await this.#ask(pending.csrPem);
    } catch (err) {
      // A refused CSR (e.g. the key size changed) is not tried again with the same key.
      if ((err as { code?: unknown }).code === GrpcStatus.INVALID_ARGUMENT) this.#pending = undefined;
      throw new StageError('intermediate', err);
    }
    if (answer === undefined || !answer.enabled) return undefined;
    const signedTarget = await stage('response', () => checkTarget(answer));
    const next = await stage('intermediate', () => {
      if (!answer.intermediateCertPem) throw new Error('the server answered the CSR without a signed intermediate');
      return cacertsFor(answer.intermediateCertPem, pending.keyPem, signedTarget, trustDomain, this.#now());
    });
    await this.#write(next);
    this.#pending = undefined;
    logger.info(
      { cluster, signingRootId: next.signingRootId, notAfter: next.notAfter.toISOString() },
      'intermediate CA signed and written to cacerts',
    );
    return signedTarget;
  }

  async #write(next: Cacerts): Promise<void> {
    if (this.#halt.signal.aborted) throw new StageError('cacerts', new Error('stopped before writing'));
    await stage('cacerts', () => this.#opts.store.write(next.files, this.#held?.files));
    this.#held = next;
  }

  async #ask(csrPem: string): Promise<relay.v1.IMeshTrustResponse | undefined> {
    const report = this.#opts.issuer.report();
    const signingRootId = this.#target?.signingRootId ?? this.#held?.signingRootId ?? '';
    const request: relay.v1.IMeshTrustRequest = {
      intermediateCsrPem: csrPem,
      trustDomain: this.#trustDomain(),
      appliedGeneration: this.#applied,
      intermediateRootId: this.#held?.signingRootId ?? '',
      intermediateNotAfterUnixMs: this.#held?.notAfter.getTime() ?? 0,
      oldRootLeafNotAfterUnixMs: await this.#opts.issuer.oldRootLeafNotAfterMs(signingRootId),
      workloads: report.workloads,
      workloadsNotListed: report.workloadsNotListed,
    };
    try {
      const pending = this.#opts.call(request);
      if (pending === undefined) return undefined;
      const answer = await untilHalted(pending, this.#halt.signal);
      this.#enabled = answer.enabled === true;
      return answer;
    } catch (err) {
      if ((err as { code?: unknown }).code === GrpcStatus.UNIMPLEMENTED) {
        // A management server without mesh trust: nothing to do, and nothing to shout about at every interval.
        if (!this.#unimplementedLogged) this.#opts.logger.info('the management server does not offer mesh trust');
        this.#unimplementedLogged = true;
        this.#enabled = false;
        return undefined;
      }
      throw new StageError('call', err);
    }
  }

  async #reconcileWorkloads(): Promise<void> {
    const held = this.#held;
    const resources = this.#opts.discovered();
    if (held === undefined || resources === undefined) return;
    const { ids, trustDomain } = this.#readDiscovered(resources);
    await stage('workloads', () => this.#opts.issuer.reconcile(ids, held, trustDomain));
  }

  #trustDomain(): string {
    return this.#readDiscovered(this.#opts.discovered() ?? []).trustDomain;
  }

  #readDiscovered(resources: readonly Resource[]): { ids: WorkloadIdentity[]; trustDomain: string } {
    if (this.#discovered?.from !== resources)
      this.#discovered = {
        from: resources,
        ids: workloadIdentitiesOf(resources),
        trustDomain: trustDomainOf(resources),
      };
    return this.#discovered;
  }

  #failed(err: unknown): void {
    if (this.#halt.signal.aborted) return;
    this.#record(err instanceof StageError ? err.stage : 'call', err);
  }

  #record(stageName: TrustStage, err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    this.#lastError = { stage: stageName, message, at: new Date(this.#now()).toISOString() };
    this.#opts.metrics?.errors.inc({ stage: stageName });
    this.#opts.logger.error(
      { stage: stageName, err },
      `mesh trust: ${stageName} failed: ${message}; cacerts kept as they were`,
    );
  }

  #updateMetrics(): void {
    const m = this.#opts.metrics;
    if (m === undefined) return;
    m.intermediateNotAfter.set(this.#held ? Math.floor(this.#held.notAfter.getTime() / 1000) : 0);
    const earliest = this.#opts.issuer.earliestNotAfterMs;
    m.workloadEarliestNotAfter.set(earliest === undefined ? 0 : Math.floor(earliest / 1000));
    m.workloadCerts.set(this.#opts.issuer.count);
    m.appliedGeneration.set(this.#applied);
  }
}
