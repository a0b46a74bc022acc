// Revocation with the `kubernetes` registry backend: the token Secret is rotated with no
// overlap, then the KubernetesCluster CR gets spec.revokeCertificatesBefore (a merge patch, so
// it composes with other spec edits). Every replica's informer sees the CR change. Used by the
// server's registry and by `meshctl cluster revoke --kubeconfig`.

import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { MeshrelayError } from '@meshrelay/api';
import {
  KUBERNETES_CLUSTER_API, kubeErrorCode, kubeFailure, type KubernetesClusterObject, type KubernetesRegistryApis,
} from './kubernetes-objects.ts';
import { KubernetesTokenRotation } from './kubernetes-token-rotation.ts';
import { formatRevocationMark, revocationMark } from './revocation.ts';
import type { IssuedToken } from './tokens.ts';

export interface KubernetesRevocation {
  readonly issued: IssuedToken;
  readonly revokedBefore: Date;
  readonly object: KubernetesClusterObject;
}

/** Reads the CR of a registered cluster; MESHRELAY_ERR_CLUSTER_NOT_FOUND when there is none. */
export async function readClusterObject(apis: KubernetesRegistryApis, namespace: string, name: string): Promise<KubernetesClusterObject> {
  try {
    return await apis.custom.getNamespacedCustomObject({ ...KUBERNETES_CLUSTER_API, namespace, name }) as KubernetesClusterObject;
  } catch (err) {
    if (kubeErrorCode(err) === 404) throw new MeshrelayError('MESHRELAY_ERR_CLUSTER_NOT_FOUND', `cluster "${name}" is not registered (no KubernetesCluster ${namespace}/${name})`, { cause: err });
    throw kubeFailure(err, `read KubernetesCluster ${namespace}/${name}`);
  }
}

/**
 * Revokes the cluster incarnation `owner`: new token (the old ones stop working at once), then
 * the revocation mark on the CR. Throws MESHRELAY_ERR_CLUSTER_NOT_FOUND or MESHRELAY_ERR_UNAVAILABLE.
 */
export async function revokeClusterInKubernetes(
  apis: KubernetesRegistryApis,
  namespace: string,
  owner: { name: string; uid: string },
  options: { readonly now: Date; readonly tokenTtlSeconds: number },
): Promise<KubernetesRevocation> {
  const rotation = new KubernetesTokenRotation(apis, namespace, { tokenTtlSeconds: options.tokenTtlSeconds, tokenOverlapSeconds: 0 });
  const issued = await rotation.rotate(owner, options.now, 0);
  const revokedBefore = revocationMark(options.now);
  const { name } = owner;
  try {
    const object = await apis.custom.patchNamespacedCustomObject(
      { ...KUBERNETES_CLUSTER_API, namespace, name, body: { spec: { revokeCertificatesBefore: formatRevocationMark(revokedBefore) } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    ) as KubernetesClusterObject;
    return { issued, revokedBefore, object };
  } catch (err) {
    if (kubeErrorCode(err) === 404) throw new MeshrelayError('MESHRELAY_ERR_CLUSTER_NOT_FOUND', `cluster "${name}" is not registered`, { cause: err });
    throw kubeFailure(err, `patch KubernetesCluster ${namespace}/${name}`);
  }
}
