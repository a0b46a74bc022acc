import type { ApiException, CoordinationV1Api, KubeConfig, V1Lease, V1LeaseSpec } from '@kubernetes/client-node';
import { kubeClient } from './kube-client.ts';
import type { ElectorBaseOptions, LeaderElector } from './leader-elector.ts';
import { createLeaseElector, type LeaseStore, type LeaseUpdate } from './lease-elector.ts';
import type { LeaseRecord } from './lease-record.ts';

export interface KubernetesLeaderElectorOptions extends ElectorBaseOptions {
  readonly kubeConfig: KubeConfig;
  readonly namespace: string;
  /** The Lease object's name; every replica of one component uses the same one. */
  readonly name: string;
}

/**
 * A leader elector on a `coordination.k8s.io/v1` Lease, the object client-go's
 * leader election uses (`holderIdentity`, `renewTime`, `leaseDurationSeconds`,
 * `acquireTime`, `leaseTransitions`), so `kubectl get lease` reads the same way.
 * Needs get/create/update on leases in `namespace`. Throws
 * MESHRELAY_ERR_INVALID_CONFIG on bad timing.
 */
export function createKubernetesLeaderElector(options: KubernetesLeaderElectorOptions): LeaderElector {
  const store = new KubernetesLeaseStore(options.kubeConfig, options.namespace, options.name);
  return createLeaseElector({ ...options, store });
}

/**
 * The lease as a Lease object: read with GET, written with POST when absent and
 * with PUT carrying the read resourceVersion otherwise, so a write based on a
 * stale read fails with 409 Conflict (resolved as `conflict`: a lost race).
 */
export class KubernetesLeaseStore implements LeaseStore {
  readonly description: string;
  readonly #api: CoordinationV1Api;
  readonly #namespace: string;
  readonly #name: string;

  constructor(kubeConfig: KubeConfig, namespace: string, name: string) {
    this.#api = kubeConfig.makeApiClient(kubeClient().CoordinationV1Api);
    this.#namespace = namespace;
    this.#name = name;
    this.description = `lease ${namespace}/${name}`;
  }

  async update(decide: (current: LeaseRecord | undefined) => LeaseRecord | undefined): Promise<LeaseUpdate> {
    const lease = await this.#read();
    const current = lease ? leaseRecordOf(lease) : undefined;
    const next = decide(current);
    if (!next) return { outcome: 'unchanged', record: current };
    const namespace = this.#namespace;
    try {
      if (lease) {
        await this.#api.replaceNamespacedLease({
          name: this.#name,
          namespace,
          body: { ...lease, spec: { ...lease.spec, ...leaseSpecOf(next) } },
        });
      } else {
        const body: V1Lease = {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.#name, namespace },
          spec: leaseSpecOf(next),
        };
        await this.#api.createNamespacedLease({ namespace, body });
      }
    } catch (err) {
      if (statusOf(err) === 409) return { outcome: 'conflict' };
      throw err;
    }
    return { outcome: 'written', record: next };
  }

  async #read(): Promise<V1Lease | undefined> {
    try {
      return await this.#api.readNamespacedLease({ name: this.#name, namespace: this.#namespace });
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }
}

/** The spec fields a LeaseRecord maps onto; times as V1MicroTime, so they serialize with microseconds. */
export function leaseSpecOf(record: LeaseRecord): V1LeaseSpec {
  return {
    holderIdentity: record.holder,
    acquireTime: new (kubeClient().V1MicroTime)(record.acquireTimeMs),
    renewTime: new (kubeClient().V1MicroTime)(record.renewTimeMs),
    // Whole seconds, rounded up: a candidate must never see a shorter lease than its holder keeps.
    leaseDurationSeconds: Math.ceil(record.leaseDurationMs / 1000),
    leaseTransitions: record.transitions,
  };
}

/**
 * The LeaseRecord of a Lease read from the API server (which gives times as
 * strings). Missing times count as long past, a missing holder as released.
 */
export function leaseRecordOf(lease: V1Lease): LeaseRecord {
  const spec = lease.spec ?? {};
  return {
    holder: spec.holderIdentity ?? '',
    acquireTimeMs: timeOf(spec.acquireTime),
    renewTimeMs: timeOf(spec.renewTime),
    leaseDurationMs: (spec.leaseDurationSeconds ?? 0) * 1000,
    transitions: spec.leaseTransitions ?? 0,
  };
}

function timeOf(value: unknown): number {
  const ms = value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : Number.NaN;
  return Number.isNaN(ms) ? 0 : ms;
}

function statusOf(err: unknown): number | undefined {
  return err instanceof kubeClient().ApiException ? (err as ApiException<unknown>).code : undefined;
}
