// The mesh trust documents every replica shares (SharedDocumentStore collection `mesh-trust`):
// `rotation` — the RotationState; `cluster.<name>` — what that cluster last reported.

import { isRecord } from '@meshrelay/api';
import type { SharedDocumentStore } from '@meshrelay/registry';
import { parseRotationState, type ClusterTrustReport, type RotationState } from './rotation-state.ts';

export interface WorkloadCert {
  readonly spiffeId: string;
  readonly notAfterMs: number;
}

/** A cluster's MeshTrust report as stored, with the last intermediate the plane signed for it. */
export interface ClusterTrustRecord extends ClusterTrustReport {
  readonly trustDomain: string;
  readonly intermediateRootId: string;
  readonly intermediateNotAfterMs: number;
  readonly workloads: readonly WorkloadCert[];
  readonly workloadsNotListed: number;
  /** The last intermediate signed for it: by which root, at which generation, valid until when. */
  readonly signed?: {
    readonly rootId: string;
    readonly generation: number;
    readonly notAfter: string;
    readonly at: string;
  };
}

const ROTATION_DOCUMENT = 'rotation';
const CLUSTER_PREFIX = 'cluster.';

/** Reads and writes the mesh trust documents; every read goes to the backend (no cache). */
export class TrustRecords {
  readonly #documents: SharedDocumentStore;
  /** What clusters() read last, by document name, with the revision it was read at. */
  #read = new Map<string, { revision: string; record: ClusterTrustRecord | undefined }>();

  constructor(documents: SharedDocumentStore) {
    this.#documents = documents;
  }

  get location(): string {
    return this.#documents.location;
  }

  async rotation(): Promise<RotationState | undefined> {
    const body = await this.#documents.get(ROTATION_DOCUMENT);
    if (body === undefined) return undefined;
    return parseRotationState(body.toString('utf8'), `mesh trust rotation state in ${this.#documents.location}`);
  }

  async writeRotation(state: RotationState): Promise<void> {
    await this.#documents.put(ROTATION_DOCUMENT, Buffer.from(JSON.stringify(state)));
  }

  async cluster(name: string): Promise<ClusterTrustRecord | undefined> {
    const body = await this.#documents.get(CLUSTER_PREFIX + name);
    return body === undefined ? undefined : parseRecord(body);
  }

  async writeCluster(record: ClusterTrustRecord): Promise<void> {
    await this.#documents.put(CLUSTER_PREFIX + record.cluster, Buffer.from(JSON.stringify(record)));
  }

  async forgetCluster(name: string): Promise<void> {
    await this.#documents.delete(CLUSTER_PREFIX + name);
  }

  /**
   * Every cluster's record; an unreadable one is left out (it is rewritten on the cluster's next
   * report). Only documents whose revision changed since the last call are read again: every
   * replica calls this on each tick, and most clusters report nothing new between two ticks.
   */
  async clusters(): Promise<Map<string, ClusterTrustRecord>> {
    const listed = (await this.#documents.list()).filter((d) => d.name.startsWith(CLUSTER_PREFIX));
    const seen = new Map<string, { revision: string; record: ClusterTrustRecord | undefined }>();
    await Promise.all(
      listed.map(async ({ name, revision }) => {
        const known = this.#read.get(name);
        if (known?.revision === revision) return seen.set(name, known);
        const body = await this.#documents.get(name);
        return seen.set(name, { revision, record: body === undefined ? undefined : parseRecord(body) });
      }),
    );
    this.#read = seen;
    const out = new Map<string, ClusterTrustRecord>();
    for (const { record } of seen.values()) if (record) out.set(record.cluster, record);
    return out;
  }
}

function parseRecord(body: Buffer): ClusterTrustRecord | undefined {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    if (!isRecord(value) || typeof value['cluster'] !== 'string' || !Number.isInteger(value['appliedGeneration']))
      return undefined;
    return value as unknown as ClusterTrustRecord;
  } catch {
    return undefined;
  }
}
