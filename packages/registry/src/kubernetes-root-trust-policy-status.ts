// Writes the status of the RootTrustPolicy CR in force: the active roots and each cluster's phase
// (what the management plane's mesh trust did with it), through the status subresource.

import { ROOT_TRUST_POLICY_API } from './kubernetes-root-trust-policy.ts';
import { kubeErrorCode, kubeFailure, type KubernetesRegistryApis } from './kubernetes-objects.ts';

const ATTEMPTS = 3;

/**
 * Replaces the status of RootTrustPolicy `namespace/name` with `status` unless it already says
 * that. A CR deleted meanwhile is not an error; a 409 (the CR changed) is retried with a fresh
 * read. Throws MESHRELAY_ERR_UNAVAILABLE naming the CR when the API keeps failing.
 */
export async function writeRootTrustPolicyStatus(
  apis: KubernetesRegistryApis,
  namespace: string,
  name: string,
  status: Readonly<Record<string, unknown>>,
): Promise<void> {
  const api = { group: ROOT_TRUST_POLICY_API.group, version: ROOT_TRUST_POLICY_API.version };
  const ref = { ...api, plural: ROOT_TRUST_POLICY_API.plural, namespace, name };
  for (let attempt = 1; ; attempt++) {
    try {
      const obj = (await apis.custom.getNamespacedCustomObject(ref)) as { status?: unknown; metadata?: unknown };
      const next = { ...status, observedGeneration: (obj.metadata as { generation?: number } | undefined)?.generation };
      if (JSON.stringify(obj.status) === JSON.stringify(next)) return;
      await apis.custom.replaceNamespacedCustomObjectStatus({ ...ref, body: { ...obj, status: next } });
      return;
    } catch (err) {
      const code = kubeErrorCode(err);
      if (code === 404) return;
      if (code !== 409 || attempt >= ATTEMPTS)
        throw kubeFailure(err, `write the status of RootTrustPolicy ${namespace}/${name}`);
    }
  }
}
