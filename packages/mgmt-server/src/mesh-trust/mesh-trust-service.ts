// The management plane's mesh trust (DESIGN: mesh trust): the root from the RootTrustPolicy, the
// rotation state every replica shares, each cluster's intermediate CA signed from its CSR, and the
// ticks that move a rotation on. Decisions run on short wall-clock ticks (`tickMs`), never on one
// long timer: Node fires a delay over ~24.8 days at once, and a root lives a year.

import type { Logger } from 'pino';
import { MeshrelayError, toMeshrelayError, type relay } from '@meshrelay/api';
import { rootIdOf, signIntermediateCsr, type CaBundle } from '@meshrelay/certs';
import type { ClusterRegistry, RootTrustPolicy, RootTrustPolicyState } from '@meshrelay/registry';
import type { MeshRoots, RootSecretReader } from './mesh-roots.ts';
import { checkMeshTrustRequest } from './request-check.ts';
import {
  advanceRotation,
  assertSteady,
  currentTarget,
  initialRotationState,
  rootOf,
  startRotation,
  type MeshRoot,
  type RotationHold,
  type RotationState,
} from './rotation-state.ts';
import type { ClusterTrustRecord, TrustRecords } from './trust-records.ts';
import { policyStatus } from './trust-status.ts';

export interface MeshTrustOptions {
  readonly records: TrustRecords;
  readonly roots: MeshRoots;
  /** Reads an operator's root Secret (secretRef); absent, a secretRef policy is reported as unusable. */
  readonly readRootSecret?: RootSecretReader;
  readonly policy: () => RootTrustPolicyState | undefined;
  readonly registry: Pick<ClusterRegistry, 'list'>;
  readonly logger: Logger;
  readonly now: () => Date;
  readonly tickMs: number;
  /** Writes the policy's status (the RootTrustPolicy CR's); absent, the status is only in the API. */
  readonly writePolicyStatus?: (policy: RootTrustPolicy, status: Readonly<Record<string, unknown>>) => Promise<void>;
}

/** What the last tick saw; read by metrics and the handler. Never mutated. */
export interface MeshTrustView {
  readonly policy: RootTrustPolicy | undefined;
  readonly state: RotationState | undefined;
  readonly records: ReadonlyMap<string, ClusterTrustRecord>;
  readonly holds: readonly RotationHold[];
  /** Why the policy's root is not (or not yet) the one in force, naming the Secret or field. */
  readonly problems: readonly string[];
}

/** How stale a cluster's stored report time may get while it reports the same thing. */
const REPORT_REFRESH_MS = 60_000;
// Gloo's defaults for intermediateCertOptions.
const DEFAULT_INTERMEDIATE = { ttlDays: 365, rsaKeyBits: 4096, orgName: 'gloo-mesh', graceRatio: 0.1 };

export class MeshTrustService {
  readonly #o: MeshTrustOptions;
  #view: MeshTrustView = { policy: undefined, state: undefined, records: new Map(), holds: [], problems: [] };
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;
  #queued: Promise<void> | undefined;

  constructor(options: MeshTrustOptions) {
    this.#o = options;
  }

  /** Runs the first tick (the root exists when it resolves, if a policy is in force), then one per tickMs. */
  async start(): Promise<void> {
    await this.tick();
    this.#timer = setInterval(() => void this.tick(), this.#o.tickMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#queued;
    await this.#ticking;
  }

  view(): MeshTrustView {
    return this.#view;
  }

  /**
   * One evaluation: the policy's root, then the rotation rules. Ticks never overlap. A call while
   * one runs gets a fresh tick that starts after it (shared by every such call), so what the
   * caller wrote before calling is always seen; failures are logged.
   */
  tick(): Promise<void> {
    if (this.#queued) return this.#queued;
    if (this.#ticking) {
      this.#queued = this.#ticking.then(() => {
        this.#queued = undefined;
        return this.tick();
      });
      return this.#queued;
    }
    this.#ticking = this.#tick()
      .catch((err: unknown) => this.#o.logger.warn({ err }, 'mesh trust tick failed; the next tick tries again'))
      .finally(() => (this.#ticking = undefined));
    return this.#ticking;
  }

  async #tick(): Promise<void> {
    const now = this.#o.now();
    const policy = this.#o.policy()?.policy;
    const problems: string[] = [];
    let state = await this.#o.records.rotation();
    if (policy !== undefined) state = await this.#followPolicy(policy, state, now, problems);
    const records = await this.#o.records.clusters();
    let holds: readonly RotationHold[] = [];
    if (state !== undefined) {
      const step = advanceRotation(state, this.#registered(), records, now);
      holds = step.holds;
      if (step.changed) state = await this.#write(state, step.state, 'phase advanced: every cluster applied it');
    }
    this.#view = Object.freeze({ policy, state, records, holds, problems: Object.freeze(problems) });
    if (policy !== undefined && this.#o.writePolicyStatus)
      await this.#o.writePolicyStatus(policy, policyStatus(this.#view, this.#registered()));
  }

  #registered(): string[] {
    return this.#o.registry.list().map((c) => c.metadata.name);
  }

  /** Makes or adopts the policy's root: the first root of the plane, or a rotation to the operator's new one. */
  async #followPolicy(
    policy: RootTrustPolicy,
    state: RotationState | undefined,
    now: Date,
    problems: string[],
  ): Promise<RotationState | undefined> {
    const ca = policy.mgmtServerCa;
    if (ca.type === 'generated') {
      if (state !== undefined) return state;
      const root = await this.#o.roots.ensureGenerated(1, ca.options, now);
      return this.#writeFirst(root, now);
    }
    let bundle: CaBundle;
    try {
      if (!this.#o.readRootSecret)
        throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', 'secretRef needs the kubernetes registry');
      bundle = await this.#o.readRootSecret(ca.secretRef);
    } catch (err) {
      const kept = state === undefined ? 'no mesh root is in force' : 'the previous root is kept';
      problems.push(`RootTrustPolicy ${policy.namespace}/${policy.name}: ${toMeshrelayError(err).message}; ${kept}`);
      return state;
    }
    if (state === undefined) return this.#writeFirst(await this.#o.roots.adopt(1, bundle), now);
    if (rootOf(state, rootIdOf(bundle.certPem)) !== undefined) return state;
    if (state.phase !== 0) {
      problems.push(
        `RootTrustPolicy ${policy.namespace}/${policy.name}: the Secret holds a new root; it is rotated in after the rotation under way`,
      );
      return state;
    }
    const index = Math.max(...state.roots.map((r) => r.index)) + 1;
    const root = await this.#o.roots.adopt(index, bundle);
    return this.#write(state, startRotation(state, root, now), `rotation to the operator's root ${root.id} started`);
  }

  /** Writes the first state unless another replica wrote one meanwhile (then that one stands). */
  async #writeFirst(root: MeshRoot, now: Date): Promise<RotationState> {
    const written = await this.#o.records.rotation();
    if (written !== undefined) return written;
    const state = initialRotationState(root, now);
    await this.#o.records.writeRotation(state);
    this.#o.logger.info({ rootId: root.id, origin: root.origin, generation: 1 }, 'mesh root in force');
    return state;
  }

  /**
   * Writes `next` if the stored state is still `from` (same generation). Replicas that evaluate the
   * same tick compute the same next state, so the check only keeps a slow replica from writing an
   * old decision over a newer one.
   */
  async #write(from: RotationState, next: RotationState, why: string): Promise<RotationState> {
    const stored = await this.#o.records.rotation();
    if (stored !== undefined && stored.generation !== from.generation) return stored;
    await this.#o.records.writeRotation(next);
    this.#o.logger.info(
      { generation: next.generation, phase: next.phase, roots: next.roots.map((r) => r.id) },
      `mesh trust ${why}`,
    );
    return next;
  }

  /** Drops a deregistered cluster's record (it no longer holds a rotation either way: only registered ones do). */
  async forget(cluster: string): Promise<void> {
    await this.#o.records.forgetCluster(cluster);
  }

  /** POST /api/v1/trust/rotate: a new generated root, rotated in through the three phases. */
  async rotate(): Promise<RotationState> {
    const policy = this.#o.policy()?.policy;
    if (policy === undefined)
      throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', 'no RootTrustPolicy is in force: there is no root');
    if (policy.mgmtServerCa.type !== 'generated') {
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_ARGUMENT',
        `RootTrustPolicy ${policy.namespace}/${policy.name} uses secretRef: rotate by putting the new root in that Secret`,
      );
    }
    const now = this.#o.now();
    const state = await this.#o.records.rotation();
    if (state === undefined) throw new MeshrelayError('MESHRELAY_ERR_UNAVAILABLE', 'the mesh root is not made yet');
    assertSteady(state);
    const index = Math.max(...state.roots.map((r) => r.index)) + 1;
    const root = await this.#o.roots.ensureGenerated(index, policy.mgmtServerCa.options, now);
    const next = await this.#write(state, startRotation(state, root, now), `rotation to new root ${root.id} started`);
    await this.tick();
    return next;
  }

  /**
   * Relay.MeshTrust for `cluster` (from its client certificate): records what it reports and signs
   * its CSR under the signing root of the current generation. A bad request or CSR throws (the
   * handler answers INVALID_ARGUMENT) before anything is written: the previous record stands.
   */
  async handle(cluster: string, request: relay.v1.IMeshTrustRequest): Promise<relay.v1.IMeshTrustResponse> {
    const { policy, state } = this.#view;
    if (policy === undefined || state === undefined) return { enabled: false };
    const req = checkMeshTrustRequest(request);
    const now = this.#o.now();
    const target = currentTarget(state);
    const signer = rootOf(state, target.signingRootId) as MeshRoot;
    const options = intermediateOptions(policy);
    let intermediateCertPem = '';
    const previous = await this.#o.records.cluster(cluster);
    let signed = previous?.signed;
    if (req.csrPem !== '') {
      const issued = signIntermediateCsr({
        root: await this.#o.roots.bundle(signer),
        csrPem: req.csrPem,
        cluster,
        trustDomain: req.trustDomain,
        ttlDays: options.ttlDays,
        orgName: options.orgName,
        // The policy's key size is a floor: an agent cannot weaken the mesh with a smaller key.
        minRsaBits: options.rsaKeyBits,
        now,
      });
      intermediateCertPem = issued.certPem;
      signed = {
        rootId: signer.id,
        generation: state.generation,
        notAfter: issued.notAfter.toISOString(),
        at: now.toISOString(),
      };
      this.#o.logger.info({ cluster, rootId: signer.id, generation: state.generation }, 'intermediate CA signed');
    }
    const record: ClusterTrustRecord = {
      cluster,
      appliedGeneration: req.appliedGeneration,
      oldRootLeafNotAfterMs: req.oldRootLeafNotAfterMs,
      reportedAt: now.toISOString(),
      trustDomain: req.trustDomain,
      intermediateRootId: req.intermediateRootId,
      intermediateNotAfterMs: req.intermediateNotAfterMs,
      workloads: req.workloads,
      workloadsNotListed: req.workloadsNotListed,
      ...(signed !== undefined ? { signed } : {}),
    };
    if (!sameRecentReport(previous, record, now)) await this.#o.records.writeCluster(record);
    return {
      enabled: true,
      generation: state.generation,
      phase: state.phase,
      bundleRootPems: target.bundleRootIds.map((id) => rootOf(state, id)?.certPem ?? ''),
      signingRootId: signer.id,
      signingRootPem: signer.certPem,
      intermediateCertPem,
      rsaKeyBits: options.rsaKeyBits,
      orgName: options.orgName,
      graceRatio: options.graceRatio,
      ttlDays: options.ttlDays,
    };
  }
}

/**
 * True when `next` says what `previous` said, reported less than REPORT_REFRESH_MS ago: then only
 * its time would change, and an agent repeats its report every --trust-interval (each a
 * ConfigMap write with the kubernetes registry), so the stored one stands a little longer.
 */
function sameRecentReport(previous: ClusterTrustRecord | undefined, next: ClusterTrustRecord, now: Date): boolean {
  if (previous === undefined || now.getTime() - Date.parse(previous.reportedAt) >= REPORT_REFRESH_MS) return false;
  return JSON.stringify({ ...previous, reportedAt: '' }) === JSON.stringify({ ...next, reportedAt: '' });
}

function intermediateOptions(policy: RootTrustPolicy) {
  const o = policy.intermediateCertOptions;
  return {
    ttlDays: o.ttlDays ?? DEFAULT_INTERMEDIATE.ttlDays,
    rsaKeyBits: o.rsaKeySizeBytes ?? DEFAULT_INTERMEDIATE.rsaKeyBits,
    orgName: o.orgName ?? DEFAULT_INTERMEDIATE.orgName,
    graceRatio: o.secretRotationGracePeriodRatio ?? DEFAULT_INTERMEDIATE.graceRatio,
  };
}
