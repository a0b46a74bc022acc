// The operator's mesh root (RootTrustPolicy mgmtServerCa.secretRef): a Secret holding a CA
// certificate and its key, as `tls.crt`/`tls.key` (kubernetes.io/tls, cert-manager) or
// `ca.crt`/`ca.key` (Gloo's and Istio's own naming).

import { MeshrelayError } from '@meshrelay/api';
import { assertCaBundle, type CaBundle } from '@meshrelay/certs';
import { kubeErrorCode, kubeFailure, retryTransient, type KubernetesRegistryApis } from './kubernetes-objects.ts';

/** The name of the Secret that keeps mesh root `index` (generated, or the operator's copied in). */
export function meshRootSecretName(index: number): string {
  return `meshrelay-mesh-root-ca-${index}`;
}

/**
 * Reads the root CA of the Secret `ref`. Throws MESHRELAY_ERR_CERTIFICATE (or _UNAVAILABLE when
 * the API cannot be reached) naming the Secret and what is missing or wrong with it.
 */
export async function readRootCaSecret(
  apis: KubernetesRegistryApis,
  ref: { readonly namespace: string; readonly name: string },
): Promise<CaBundle> {
  const where = `Secret ${ref.namespace}/${ref.name}`;
  let secret;
  try {
    secret = await retryTransient(() => apis.core.readNamespacedSecret(ref));
  } catch (err) {
    if (kubeErrorCode(err) === 404)
      throw new MeshrelayError('MESHRELAY_ERR_CERTIFICATE', `root CA ${where} does not exist`);
    throw kubeFailure(err, `read ${where}`);
  }
  const data = secret.data ?? {};
  const pair = [
    ['tls.crt', 'tls.key'],
    ['ca.crt', 'ca.key'],
  ].find(([cert, key]) => data[cert as string] !== undefined && data[key as string] !== undefined);
  if (pair === undefined) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_CERTIFICATE',
      `root CA ${where}: expected data keys tls.crt and tls.key (or ca.crt and ca.key), found ${Object.keys(data).sort().join(', ') || 'none'}`,
    );
  }
  const decode = (key: string) => Buffer.from(data[key] ?? '', 'base64').toString('utf8');
  const bundle = { certPem: decode(pair[0] as string), keyPem: decode(pair[1] as string) };
  assertCaBundle(bundle, `root CA ${where}`);
  return bundle;
}
