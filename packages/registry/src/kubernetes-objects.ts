// The Kubernetes objects behind the `kubernetes` registry backend, shared by the management server
// and meshctl (which registers clusters directly through the Kubernetes API):
//   - KubernetesCluster (admin.gloo.solo.io/v2) CRs in the management namespace: the record;
//   - Secret `relay-token-<cluster>` (Opaque; data sha256, expiresAt, previousSha256,
//     previousExpiresAt), owned by the CR through an ownerReference, so deleting the CR (also with
//     kubectl) lets the garbage collector remove the token hashes;
//   - Secret `relay-root-ca` (kubernetes.io/tls) and ConfigMap `relay-vip-allocations`.

import { setTimeout as delay } from 'node:timers/promises';
import type {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObject,
  V1Secret,
} from '@kubernetes/client-node';
import {
  KINDS,
  MeshrelayError,
  isValidClusterName,
  type ClusterCondition,
  type KubernetesCluster,
} from '@meshrelay/api';
import { assertClusterSpec, clusterSpecProblem } from './cluster-spec.ts';
import type { RegisterOptions } from './cluster-registry.ts';
import { kubeClient } from './kube-client.ts';
import { issueToken, type IssuedToken, type StoredToken, type TokenRecord } from './tokens.ts';

/** Where KubernetesCluster CRs live in the API. */
export const KUBERNETES_CLUSTER_API = {
  group: 'admin.gloo.solo.io',
  version: 'v2',
  plural: 'kubernetesclusters',
} as const;
export const RELAY_TOKEN_SECRET_PREFIX = 'relay-token-';
export const RELAY_ROOT_CA_SECRET = 'relay-root-ca';
export const VIP_ALLOCATIONS_CONFIGMAP = 'relay-vip-allocations';
/** Labels on every object the server or meshctl creates. */
export const MESHRELAY_MANAGED_LABELS: Readonly<Record<string, string>> = {
  'app.kubernetes.io/managed-by': 'meshrelay',
};
export const CLUSTER_NAME_LABEL = 'meshrelay.io/cluster';

/** The clients the Kubernetes backend talks through. */
export interface KubernetesRegistryApis {
  readonly custom: CustomObjectsApi;
  readonly core: CoreV1Api;
}

export function registryApis(kubeConfig: KubeConfig): KubernetesRegistryApis {
  const { CustomObjectsApi: Custom, CoreV1Api: Core } = kubeClient();
  return { custom: kubeConfig.makeApiClient(Custom), core: kubeConfig.makeApiClient(Core) };
}

export function tokenSecretName(cluster: string): string {
  return `${RELAY_TOKEN_SECRET_PREFIX}${cluster}`;
}

/**
 * The raw CR as the API returns it (status may be absent). CustomObjectsApi does not deserialise,
 * so timestamps arrive as strings despite V1ObjectMeta's Date type.
 */
export interface KubernetesClusterObject extends KubernetesObject {
  spec?: { clusterDomain?: unknown; trustDomain?: unknown; skipWarming?: unknown; revokeCertificatesBefore?: unknown };
  status?: { conditions?: unknown };
}

/** A new KubernetesCluster CR (the API drops status on create: it is a subresource). */
export function clusterObject(name: string, namespace: string, options: RegisterOptions): KubernetesClusterObject {
  return {
    apiVersion: KINDS.KubernetesCluster.apiVersion,
    kind: KINDS.KubernetesCluster.kind,
    metadata: { name, namespace, labels: { ...MESHRELAY_MANAGED_LABELS } },
    spec: {
      ...(options.clusterDomain !== undefined ? { clusterDomain: options.clusterDomain } : {}),
      ...(options.trustDomain !== undefined ? { trustDomain: options.trustDomain } : {}),
      skipWarming: options.skipWarming ?? false,
    },
  };
}

const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
const unb64 = (text: string | undefined): string | undefined =>
  text === undefined ? undefined : Buffer.from(text, 'base64').toString('utf8');

/** The token Secret of `owner`, holding only hashes; owned by the CR (garbage collected with it). */
export function tokenSecretObject(
  owner: { name: string; uid: string },
  namespace: string,
  record: TokenRecord,
): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: tokenSecretName(owner.name),
      namespace,
      labels: { ...MESHRELAY_MANAGED_LABELS, [CLUSTER_NAME_LABEL]: owner.name },
      ownerReferences: [
        {
          apiVersion: KINDS.KubernetesCluster.apiVersion,
          kind: KINDS.KubernetesCluster.kind,
          name: owner.name,
          uid: owner.uid,
          controller: true,
          blockOwnerDeletion: false,
        },
      ],
    },
    data: {
      sha256: b64(record.current.sha256),
      expiresAt: b64(record.current.expiresAt),
      ...(record.previous
        ? { previousSha256: b64(record.previous.sha256), previousExpiresAt: b64(record.previous.expiresAt) }
        : {}),
    },
  };
}

/**
 * The token record of a Secret, or undefined when it is malformed or belongs to another
 * incarnation of the cluster (a CR of the same name registered earlier: different uid).
 */
export function tokenRecordOf(secret: V1Secret, ownerUid: string): TokenRecord | undefined {
  if (!(secret.metadata?.ownerReferences ?? []).some((ref) => ref.uid === ownerUid)) return undefined;
  const data = secret.data ?? {};
  const stored = (hash: string | undefined, expiry: string | undefined): StoredToken | undefined => {
    const sha256 = unb64(hash);
    const expiresAt = unb64(expiry);
    return sha256 && expiresAt && /^[0-9a-f]{64}$/.test(sha256) ? { sha256, expiresAt } : undefined;
  };
  const current = stored(data['sha256'], data['expiresAt']);
  if (!current) return undefined;
  const previous = stored(data['previousSha256'], data['previousExpiresAt']);
  return { current, ...(previous ? { previous } : {}) };
}

function timestamp(value: unknown): string {
  if (value instanceof Date) return value.toISOString().replace(/\.\d{3}Z$/, 'Z');
  return typeof value === 'string' ? value : '';
}

function conditionsOf(raw: unknown): ClusterCondition[] | string {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) return 'status.conditions must be a list';
  const out: ClusterCondition[] = [];
  for (const c of raw as Array<Record<string, unknown>>) {
    if (typeof c?.type !== 'string' || !['True', 'False', 'Unknown'].includes(c.status as string)) {
      return 'status.conditions entries need a type and a status of True, False or Unknown';
    }
    out.push({
      type: c.type,
      status: c.status as ClusterCondition['status'],
      reason: String(c.reason ?? ''),
      message: String(c.message ?? ''),
      lastTransitionTime: timestamp(c.lastTransitionTime),
    });
  }
  return out;
}

/** The registry's view of a CR, or a description of what is wrong with it. */
export function clusterFromObject(obj: KubernetesClusterObject): { cluster: KubernetesCluster } | { problem: string } {
  const { metadata, spec } = obj;
  if (!metadata?.name || !isValidClusterName(metadata.name))
    return { problem: 'metadata.name must be a DNS-1123 label' };
  if (!metadata.uid) return { problem: 'metadata.uid is missing' };
  if (typeof spec !== 'object' || spec === null) return { problem: 'spec is missing' };
  const specProblem = clusterSpecProblem(spec);
  if (specProblem) return { problem: specProblem };
  const conditions = conditionsOf(obj.status?.conditions);
  if (typeof conditions === 'string') return { problem: conditions };
  const cluster: KubernetesCluster = {
    apiVersion: KINDS.KubernetesCluster.apiVersion as 'admin.gloo.solo.io/v2',
    kind: 'KubernetesCluster',
    metadata: {
      name: metadata.name,
      namespace: metadata.namespace ?? '',
      uid: metadata.uid,
      creationTimestamp: timestamp(metadata.creationTimestamp),
      ...(metadata.labels ? { labels: { ...metadata.labels } } : {}),
    },
    spec: {
      ...(spec.clusterDomain !== undefined ? { clusterDomain: spec.clusterDomain as string } : {}),
      ...(spec.trustDomain !== undefined ? { trustDomain: spec.trustDomain as string } : {}),
      ...(spec.skipWarming !== undefined ? { skipWarming: spec.skipWarming as boolean } : {}),
      ...(spec.revokeCertificatesBefore !== undefined
        ? { revokeCertificatesBefore: spec.revokeCertificatesBefore as string }
        : {}),
    },
    ...(conditions.length > 0 ? { status: { conditions } } : {}),
  };
  return { cluster };
}

/** The HTTP status of a failed Kubernetes API call; undefined for a transport failure. */
export function kubeErrorCode(err: unknown): number | undefined {
  return isApiException(err) ? (err.code as number) : undefined;
}

/** Transport failures, 429 and 5xx are worth retrying; other statuses are answers. */
export function isRetryableKubeError(err: unknown): boolean {
  const code = kubeErrorCode(err);
  return code === undefined || code === 429 || code >= 500;
}

function kubeMessage(err: unknown): string {
  if (!isApiException(err)) return err instanceof Error ? err.message : String(err);
  let body: unknown = err.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      return `HTTP ${err.code}: ${body}`;
    }
  }
  const message = (body as { message?: unknown } | undefined)?.message;
  return `HTTP ${err.code}${typeof message === 'string' ? `: ${message}` : ''}`;
}

/** Wraps a failed Kubernetes API call in the error catalogue, naming what was attempted. */
export function kubeFailure(err: unknown, action: string): MeshrelayError {
  const code = kubeErrorCode(err);
  const catalogue =
    code === 401 || code === 403
      ? 'MESHRELAY_ERR_PERMISSION_DENIED'
      : isRetryableKubeError(err)
        ? 'MESHRELAY_ERR_UNAVAILABLE'
        : 'MESHRELAY_ERR_INTERNAL';
  return new MeshrelayError(catalogue, `Kubernetes API: ${action}: ${kubeMessage(err)}`, { cause: err });
}

/**
 * Runs `call`, retrying transport failures, 429 and 5xx with full-jitter backoff (`attempts` in
 * all); other failures and the last transient one are thrown as they are.
 */
export async function retryTransient<T>(call: () => Promise<T>, attempts = 5, baseMs = 200): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (attempt >= attempts || !isRetryableKubeError(err)) throw err;
      await delay(Math.round(Math.random() * baseMs * 2 ** attempt));
    }
  }
}

export interface CreateClusterOptions extends RegisterOptions {
  readonly namespace: string;
  readonly tokenTtlSeconds: number;
  readonly now: Date;
}

export interface CreatedCluster {
  readonly object: KubernetesClusterObject;
  readonly issued: IssuedToken;
}

/**
 * Creates the KubernetesCluster CR and its token Secret. Throws MESHRELAY_ERR_INVALID_ARGUMENT
 * for a bad name, MESHRELAY_ERR_CLUSTER_EXISTS when the CR exists. A Secret left by an earlier
 * registration of the same name (garbage collection is asynchronous) is overwritten. When the
 * Secret cannot be written the CR is deleted again, so no cluster is left without a token.
 */
export async function createClusterWithToken(
  apis: KubernetesRegistryApis,
  name: string,
  options: CreateClusterOptions,
): Promise<CreatedCluster> {
  if (!isValidClusterName(name)) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `cluster name "${name}" is not a DNS-1123 label (lowercase letters, digits and "-", at most 63)`,
    );
  }
  assertClusterSpec({
    clusterDomain: options.clusterDomain,
    trustDomain: options.trustDomain,
    skipWarming: options.skipWarming,
  });
  const { namespace } = options;
  let object: KubernetesClusterObject;
  try {
    object = (await apis.custom.createNamespacedCustomObject({
      ...KUBERNETES_CLUSTER_API,
      namespace,
      body: clusterObject(name, namespace, options),
    })) as KubernetesClusterObject;
  } catch (err) {
    if (kubeErrorCode(err) === 409)
      throw new MeshrelayError('MESHRELAY_ERR_CLUSTER_EXISTS', `cluster "${name}" is already registered`, {
        cause: err,
      });
    throw kubeFailure(err, `create KubernetesCluster ${namespace}/${name}`);
  }
  const issued = issueToken(options.now, options.tokenTtlSeconds, 0, undefined);
  try {
    await writeTokenSecret(apis, namespace, { name, uid: object.metadata?.uid ?? '' }, issued.record);
  } catch (err) {
    await apis.custom
      .deleteNamespacedCustomObject({ ...KUBERNETES_CLUSTER_API, namespace, name })
      .catch(() => undefined);
    throw err;
  }
  return { object, issued };
}

/** Creates or overwrites the token Secret of `owner` (last writer wins; callers serialise rotations). */
export async function writeTokenSecret(
  apis: KubernetesRegistryApis,
  namespace: string,
  owner: { name: string; uid: string },
  record: TokenRecord,
): Promise<void> {
  const body = tokenSecretObject(owner, namespace, record);
  const name = tokenSecretName(owner.name);
  try {
    await apis.core.createNamespacedSecret({ namespace, body });
    return;
  } catch (err) {
    if (kubeErrorCode(err) !== 409) throw kubeFailure(err, `create Secret ${namespace}/${name}`);
  }
  try {
    await apis.core.replaceNamespacedSecret({ name, namespace, body });
  } catch (err) {
    throw kubeFailure(err, `replace Secret ${namespace}/${name}`);
  }
}

/** The token record of a cluster incarnation, or undefined when its Secret is absent or foreign. */
export async function readTokenRecord(
  apis: KubernetesRegistryApis,
  namespace: string,
  owner: { name: string; uid: string },
): Promise<TokenRecord | undefined> {
  const name = tokenSecretName(owner.name);
  try {
    return tokenRecordOf(await apis.core.readNamespacedSecret({ name, namespace }), owner.uid);
  } catch (err) {
    if (kubeErrorCode(err) === 404) return undefined;
    throw kubeFailure(err, `read Secret ${namespace}/${name}`);
  }
}

/** Whether err is client-node's ApiException (which loads client-node, if nothing has yet). */
function isApiException(err: unknown): err is ApiException<unknown> {
  return err instanceof Error && err instanceof kubeClient().ApiException;
}
