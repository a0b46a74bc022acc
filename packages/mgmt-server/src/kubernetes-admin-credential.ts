import type { CoreV1Api } from '@kubernetes/client-node';
import { MeshrelayError } from '@meshrelay/api';
import { assertAdminToken, newAdminToken, type AdminCredential } from './admin-credential.ts';
import { MESHRELAY_MANAGED_LABELS, kubeErrorCode, kubeFailure, retryTransient } from '@meshrelay/registry';

/** The Secret holding the admin credential with the `kubernetes` registry (data key `token`). */
export const ADMIN_TOKEN_SECRET = 'meshrelay-admin-token';
export const ADMIN_TOKEN_SECRET_KEY = 'token';

/**
 * The admin credential in a Secret of the management namespace, created if absent. The API server
 * creates a name at most once, so replicas starting together end with one token: the loser of the
 * race gets 409 AlreadyExists and loads the winner's. Reading it is what RBAC on Secrets guards.
 */
export async function ensureSecretAdminToken(
  core: CoreV1Api,
  namespace: string,
  name = ADMIN_TOKEN_SECRET,
): Promise<AdminCredential> {
  const location = `Secret ${namespace}/${name} (key ${ADMIN_TOKEN_SECRET_KEY})`;
  const existing = await loadToken(core, namespace, name, location);
  if (existing !== undefined) return { token: existing, location };
  try {
    await retryTransient(() =>
      core.createNamespacedSecret({
        namespace,
        body: {
          apiVersion: 'v1',
          kind: 'Secret',
          type: 'Opaque',
          metadata: { name, namespace, labels: { ...MESHRELAY_MANAGED_LABELS } },
          data: { [ADMIN_TOKEN_SECRET_KEY]: Buffer.from(newAdminToken(), 'utf8').toString('base64') },
        },
      }),
    );
  } catch (err) {
    if (kubeErrorCode(err) !== 409) throw kubeFailure(err, `create ${location}`);
  }
  const token = await loadToken(core, namespace, name, location);
  if (token === undefined)
    throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `${location} vanished while it was being created`);
  return { token, location };
}

async function loadToken(
  core: CoreV1Api,
  namespace: string,
  name: string,
  location: string,
): Promise<string | undefined> {
  let secret;
  try {
    secret = await retryTransient(() => core.readNamespacedSecret({ name, namespace }));
  } catch (err) {
    if (kubeErrorCode(err) === 404) return undefined;
    throw kubeFailure(err, `read ${location}`);
  }
  const data = secret.data?.[ADMIN_TOKEN_SECRET_KEY];
  if (data === undefined)
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      `${location}: has no data key "${ADMIN_TOKEN_SECRET_KEY}"`,
    );
  const token = Buffer.from(data, 'base64')
    .toString('utf8')
    .replace(/\r?\n$/, '');
  assertAdminToken(token, location);
  return token;
}
