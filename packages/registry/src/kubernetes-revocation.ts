// Revocation with the `kubernetes` registry backend: the token Secret is rotated with no
// overlap, then the KubernetesCluster CR gets spec.revokeCertificatesBefore (a compare-and-set
// write, kubernetes-spec-change.ts, so it composes with other spec edits). Every replica's informer sees the CR change.
// Used by the
// server's registry and by `meshctl cluster revoke --kubeconfig`.

import type { KubernetesClusterObject, KubernetesRegistryApis } from './kubernetes-objects.ts';
import { changeClusterSpec } from './kubernetes-spec-change.ts';
import { KubernetesTokenRotation } from './kubernetes-token-rotation.ts';
import { formatRevocationMark, revocationMark } from './revocation.ts';
import type { IssuedToken } from './tokens.ts';

export { readClusterObject } from './kubernetes-spec-change.ts';

export interface KubernetesRevocation {
  readonly issued: IssuedToken;
  readonly revokedBefore: Date;
  readonly object: KubernetesClusterObject;
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
  const rotation = new KubernetesTokenRotation(apis, namespace, {
    tokenTtlSeconds: options.tokenTtlSeconds,
    tokenOverlapSeconds: 0,
  });
  const issued = await rotation.rotate(owner, options.now, 0);
  const revokedBefore = revocationMark(options.now);
  const object = await changeClusterSpec(apis, namespace, owner, (spec) => ({
    ...spec,
    revokeCertificatesBefore: formatRevocationMark(revokedBefore),
  }));
  return { issued, revokedBefore, object };
}
