// The durable state of a management replica (DESIGN §5) for the two registry backends:
// `file` — the state directory (local runs, one machine or a shared volume);
// `kubernetes` — KubernetesCluster CRs + token Secrets, the `relay-root-ca` Secret and the
// `relay-vip-allocations` ConfigMap in the management namespace, with a Lease electing the
// replica that initialises status of CRs created outside the server.

import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { FileCaStore, ensureRelayCa, type CaBundle, type CaStore } from '@meshrelay/certs';
import { createKubernetesLeaderElector, loadKubeConfig, type LeaderElector } from '@meshrelay/kube';
import {
  DirectoryDocumentStore,
  KubernetesDocumentStore,
  KubernetesSecretCaStore,
  KubernetesVipAllocations,
  VipAllocations,
  meshRootSecretName,
  readRootCaSecret,
  writeRootTrustPolicyStatus,
  createFileClusterRegistry,
  createKubernetesClusterRegistry,
  registryApis,
  type ClusterRegistry,
  type SharedDocumentStore,
  type VipAllocationStore,
} from '@meshrelay/registry';
import { ensureFileAdminToken, readAdminTokenFile, type AdminCredential } from './admin-credential.ts';
import { vipPoolsOf, type ServerConfig } from './config.ts';
import { ensureSecretAdminToken } from './kubernetes-admin-credential.ts';

export interface DurableState {
  readonly ca: CaBundle;
  /** The admin credential of the HTTP API: the operator's, or the one kept in this state. */
  readonly admin: AdminCredential;
  readonly registry: ClusterRegistry;
  readonly vips: VipAllocationStore;
  /**
   * The plane-wide documents of one collection (stream claims, held outputs, carried
   * contributions): a directory of the state directory with the file registry, ConfigMaps in the
   * management namespace with the kubernetes registry (each pod has a state directory of its own).
   */
  documents(collection: SharedCollection): SharedDocumentStore;
  /**
   * Where mesh root `index` and its key are kept (created at most once): `<stateDir>/mesh-ca/root-<index>`
   * with the file registry, the Secret `meshrelay-mesh-root-ca-<index>` with the kubernetes registry.
   */
  meshRootStore(index: number): CaStore;
  /** Reads an operator's root CA Secret (RootTrustPolicy secretRef); kubernetes registry only. */
  readonly readRootSecret?: (ref: { readonly namespace: string; readonly name: string }) => Promise<CaBundle>;
  /**
   * Writes the status of a RootTrustPolicy CR (kubernetes registry only); only the replica that
   * leads the status-writer election writes, the others resolve at once.
   */
  readonly writeRootTrustPolicyStatus?: (
    policy: { readonly namespace: string; readonly name: string },
    status: Readonly<Record<string, unknown>>,
  ) => Promise<void>;
  /** Closes the registry and leaves the election (releasing the Lease when held). */
  close(): Promise<void>;
}

/** The collections of plane-wide documents (directory names, and ConfigMap label values). */
export type SharedCollection =
  'stream-claims' | 'held-outputs' | 'contributions' | 'token-bindings' | 'data-plane' | 'mesh-trust' | 'interests';

/** The Lease of the status-writer election in the management namespace. */
export const STATUS_WRITER_LEASE = 'meshrelay-mgmt-status-writer';
// client-go's defaults for controllers (15 s / 10 s / 2 s).
const LEASE_TIMING = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const CA_COMMON_NAME = 'meshrelay relay root CA';
const MESH_ROOT_FILE_NAME = 'mesh-root-ca.json';

/**
 * Opens the configured backend: the relay root CA (created once, atomically, by whichever replica
 * gets there first), the registry with its first snapshot in memory, and the VIP allocation store.
 * Throws MESHRELAY_ERR_INVALID_CONFIG for an unusable kubeconfig and MESHRELAY_ERR_UNAVAILABLE
 * when the Kubernetes API cannot be reached.
 */
export async function openDurableState(config: ServerConfig, logger: Logger, now: () => Date): Promise<DurableState> {
  if (config.registry === 'kubernetes') return openKubernetesState(config, logger, now);
  await mkdir(config.stateDir, { recursive: true });
  const admin = (await givenAdminCredential(config)) ?? (await ensureFileAdminToken(config.stateDir));
  const ca = await ensureCa(new FileCaStore(join(config.stateDir, 'ca')), now);
  const registry = await createFileClusterRegistry({
    dir: join(config.stateDir, 'registry'),
    tokenTtlSeconds: config.tokenTtlSeconds,
    tokenOverlapSeconds: config.tokenOverlapSeconds,
    logger,
  });
  const vips = new VipAllocations(join(config.stateDir, 'registry', 'vip-allocations.json'), vipPoolsOf(config));
  const documents = (collection: SharedCollection) => new DirectoryDocumentStore(join(config.stateDir, collection));
  const meshRootStore = (index: number) =>
    new FileCaStore(join(config.stateDir, 'mesh-ca', `root-${index}`), MESH_ROOT_FILE_NAME);
  return { ca, admin, registry, vips, documents, meshRootStore, close: () => registry.close() };
}

async function openKubernetesState(config: ServerConfig, logger: Logger, now: () => Date): Promise<DurableState> {
  const kubeConfig = loadKubeConfig({
    ...(config.kubeconfig !== undefined ? { kubeconfig: config.kubeconfig } : {}),
    ...(config.kubeContext !== undefined ? { context: config.kubeContext } : {}),
  });
  const apis = registryApis(kubeConfig);
  const ca = await ensureCa(new KubernetesSecretCaStore(apis, config.namespace), now);
  const admin = (await givenAdminCredential(config)) ?? (await ensureSecretAdminToken(apis.core, config.namespace));
  const elector: LeaderElector = createKubernetesLeaderElector({
    kubeConfig,
    namespace: config.namespace,
    name: STATUS_WRITER_LEASE,
    identity: config.replicaName,
    ...LEASE_TIMING,
    logger: logger.child({ component: 'status-writer-election' }),
  });
  elector.start();
  let registry: ClusterRegistry;
  try {
    registry = await createKubernetesClusterRegistry({
      kubeConfig,
      namespace: config.namespace,
      tokenTtlSeconds: config.tokenTtlSeconds,
      tokenOverlapSeconds: config.tokenOverlapSeconds,
      logger: logger.child({ component: 'registry' }),
      statusWriter: elector,
      now,
    });
  } catch (err) {
    await elector.stop();
    throw err;
  }
  logger.info(
    { namespace: config.namespace, cluster: kubeConfig.getCurrentCluster()?.server },
    'registry: Kubernetes API',
  );
  return {
    ca,
    admin,
    registry,
    vips: new KubernetesVipAllocations(apis, config.namespace, vipPoolsOf(config)),
    documents: (collection) => new KubernetesDocumentStore(apis, config.namespace, collection),
    meshRootStore: (index) => new KubernetesSecretCaStore(apis, config.namespace, meshRootSecretName(index)),
    readRootSecret: (ref) => readRootCaSecret(apis, ref),
    writeRootTrustPolicyStatus: async (policy, status) => {
      if (elector.isLeader()) await writeRootTrustPolicyStatus(apis, policy.namespace, policy.name, status);
    },
    close: async () => {
      await registry.close();
      await elector.stop();
    },
  };
}

/** The credential the operator gave (flag, variable or file), if any. */
async function givenAdminCredential(config: ServerConfig): Promise<AdminCredential | undefined> {
  if (config.adminTokenFile !== undefined) {
    return {
      token: await readAdminTokenFile(config.adminTokenFile, '--admin-token-file'),
      location: `file ${config.adminTokenFile} (--admin-token-file)`,
    };
  }
  if (config.adminToken !== undefined)
    return { token: config.adminToken, location: '--admin-token (MESHRELAY_ADMIN_TOKEN)' };
  return undefined;
}

function ensureCa(store: CaStore, now: () => Date): Promise<CaBundle> {
  return ensureRelayCa(store, { commonName: CA_COMMON_NAME, now: now() });
}
