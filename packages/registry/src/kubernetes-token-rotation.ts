// Token rotation in the `relay-token-<cluster>` Secret: read, issue, and write back guarded by
// the Secret's resourceVersion, so two concurrent rotations cannot both report success while
// one of their tokens was silently overwritten.

import { MeshrelayError } from '@meshrelay/api';
import {
  kubeErrorCode,
  kubeFailure,
  tokenRecordOf,
  tokenSecretName,
  tokenSecretObject,
  type KubernetesRegistryApis,
} from './kubernetes-objects.ts';
import { issueToken, type IssuedToken } from './tokens.ts';

const ROTATION_ATTEMPTS = 5;

export class KubernetesTokenRotation {
  readonly #apis: KubernetesRegistryApis;
  readonly #namespace: string;
  readonly #ttl: { readonly tokenTtlSeconds: number; readonly tokenOverlapSeconds: number };

  constructor(
    apis: KubernetesRegistryApis,
    namespace: string,
    ttl: { readonly tokenTtlSeconds: number; readonly tokenOverlapSeconds: number },
  ) {
    this.#apis = apis;
    this.#namespace = namespace;
    this.#ttl = ttl;
  }

  /**
   * Issues a new token for the cluster incarnation `owner`; the current one stays valid for the
   * overlap window (`overlapSeconds`, default the configured one; 0 voids it at once). Throws MESHRELAY_ERR_UNAVAILABLE
   * when the API fails or rotations keep colliding.
   */
  async rotate(
    owner: { name: string; uid: string },
    now: Date,
    overlapSeconds = this.#ttl.tokenOverlapSeconds,
  ): Promise<IssuedToken> {
    const namespace = this.#namespace;
    const name = tokenSecretName(owner.name);
    for (let attempt = 0; attempt < ROTATION_ATTEMPTS; attempt++) {
      let existing;
      try {
        existing = await this.#apis.core.readNamespacedSecret({ name, namespace });
      } catch (err) {
        if (kubeErrorCode(err) !== 404) throw kubeFailure(err, `read Secret ${namespace}/${name}`);
      }
      const record = existing ? tokenRecordOf(existing, owner.uid) : undefined;
      const issued = issueToken(now, this.#ttl.tokenTtlSeconds, overlapSeconds, record);
      const body = tokenSecretObject(owner, namespace, issued.record);
      try {
        if (existing) {
          body.metadata = { ...body.metadata, resourceVersion: existing.metadata?.resourceVersion };
          await this.#apis.core.replaceNamespacedSecret({ name, namespace, body });
        } else {
          await this.#apis.core.createNamespacedSecret({ namespace, body });
        }
        return issued;
      } catch (err) {
        if (kubeErrorCode(err) !== 409) throw kubeFailure(err, `write Secret ${namespace}/${name}`);
      }
    }
    throw new MeshrelayError(
      'MESHRELAY_ERR_UNAVAILABLE',
      `token rotation of cluster "${owner.name}" kept colliding with concurrent writes; try again`,
    );
  }
}
