// Compare-and-set writes of a KubernetesCluster CR's spec: the CR is read, the change is applied to
// the spec as read, and the result replaces the CR guarded by the resourceVersion that was read.
// A 409 (someone wrote the CR in between) starts again from the fresh CR, a bounded number of
// times, so a change never undoes a field it did not touch and is checked against the spec it
// actually lands on. The change is bound to one incarnation of the cluster (its uid): a CR
// deleted and created again under the same name meanwhile is not changed.

import { MeshrelayError } from '@meshrelay/api';
import { assertClusterSpec } from './cluster-spec.ts';
import {
  KUBERNETES_CLUSTER_API,
  kubeErrorCode,
  kubeFailure,
  type KubernetesClusterObject,
  type KubernetesRegistryApis,
} from './kubernetes-objects.ts';

/** Reads the CR of a registered cluster; MESHRELAY_ERR_CLUSTER_NOT_FOUND when there is none. */
export async function readClusterObject(
  apis: KubernetesRegistryApis,
  namespace: string,
  name: string,
): Promise<KubernetesClusterObject> {
  try {
    return (await apis.custom.getNamespacedCustomObject({
      ...KUBERNETES_CLUSTER_API,
      namespace,
      name,
    })) as KubernetesClusterObject;
  } catch (err) {
    if (kubeErrorCode(err) === 404)
      throw new MeshrelayError(
        'MESHRELAY_ERR_CLUSTER_NOT_FOUND',
        `cluster "${name}" is not registered (no KubernetesCluster ${namespace}/${name})`,
        { cause: err },
      );
    throw kubeFailure(err, `read KubernetesCluster ${namespace}/${name}`);
  }
}

/** Replaces tried before giving up when every one met a newer resourceVersion. */
export const SPEC_CHANGE_ATTEMPTS = 5;

type Spec = Readonly<Record<string, unknown>>;

/**
 * Applies `change` to the CR's spec as stored and writes it; returns the written CR. Throws
 * MESHRELAY_ERR_CLUSTER_NOT_FOUND (no such CR, or another uid), MESHRELAY_ERR_INVALID_ARGUMENT
 * (the result is not a valid spec) or MESHRELAY_ERR_UNAVAILABLE (conflicts on every attempt).
 */
export async function changeClusterSpec(
  apis: KubernetesRegistryApis,
  namespace: string,
  owner: { readonly name: string; readonly uid?: string },
  change: (spec: Spec) => Spec,
): Promise<KubernetesClusterObject> {
  const { name } = owner;
  for (let attempt = 1; attempt <= SPEC_CHANGE_ATTEMPTS; attempt++) {
    const fresh = await readClusterObject(apis, namespace, name);
    if (owner.uid && fresh.metadata?.uid !== owner.uid) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_CLUSTER_NOT_FOUND',
        `cluster "${name}" was deregistered and registered again (uid ${fresh.metadata?.uid ?? 'none'}, not ${owner.uid})`,
      );
    }
    const spec = change((fresh as { spec?: Spec }).spec ?? {});
    assertClusterSpec(spec);
    try {
      return (await apis.custom.replaceNamespacedCustomObject({
        ...KUBERNETES_CLUSTER_API,
        namespace,
        name,
        body: { ...fresh, spec },
      })) as KubernetesClusterObject;
    } catch (err) {
      const code = kubeErrorCode(err);
      if (code === 404)
        throw new MeshrelayError('MESHRELAY_ERR_CLUSTER_NOT_FOUND', `cluster "${name}" is not registered`, {
          cause: err,
        });
      if (code !== 409) throw kubeFailure(err, `replace KubernetesCluster ${namespace}/${name}`);
    }
  }
  throw new MeshrelayError(
    'MESHRELAY_ERR_UNAVAILABLE',
    `KubernetesCluster ${namespace}/${name} changed under each of ${SPEC_CHANGE_ATTEMPTS} attempts to write it; try again`,
  );
}
