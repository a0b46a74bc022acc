import { MeshrelayError } from '@meshrelay/api';
import { assertCaBundle, type CaBundle, type CaStore } from '@meshrelay/certs';
import {
  MESHRELAY_MANAGED_LABELS,
  RELAY_ROOT_CA_SECRET,
  kubeErrorCode,
  kubeFailure,
  retryTransient,
  type KubernetesRegistryApis,
} from './kubernetes-objects.ts';

/**
 * The relay root CA in a Secret of the management namespace (`relay-root-ca`, type
 * kubernetes.io/tls: `tls.crt` and `tls.key`). Create-if-absent is atomic because the API server
 * creates a name at most once: the loser of a race gets 409 AlreadyExists and loads the winner's.
 * Transient API failures are retried a few times, so replicas starting during an API hiccup still
 * converge on one CA.
 */
export class KubernetesSecretCaStore implements CaStore {
  readonly #apis: KubernetesRegistryApis;
  readonly #namespace: string;
  readonly #name: string;

  constructor(apis: KubernetesRegistryApis, namespace: string, name = RELAY_ROOT_CA_SECRET) {
    this.#apis = apis;
    this.#namespace = namespace;
    this.#name = name;
  }

  async load(): Promise<CaBundle | undefined> {
    let secret;
    try {
      secret = await retryTransient(() =>
        this.#apis.core.readNamespacedSecret({ name: this.#name, namespace: this.#namespace }),
      );
    } catch (err) {
      if (kubeErrorCode(err) === 404) return undefined;
      throw kubeFailure(err, `read Secret ${this.#namespace}/${this.#name}`);
    }
    const source = `relay CA Secret ${this.#namespace}/${this.#name} (refusing to create a new CA; restore it or delete it to start a new trust root)`;
    const certPem = decode(secret.data?.['tls.crt']);
    const keyPem = decode(secret.data?.['tls.key']);
    if (!certPem || !keyPem)
      throw new MeshrelayError('MESHRELAY_ERR_CERTIFICATE', `${source}: expected data tls.crt and tls.key`);
    const bundle = { certPem, keyPem };
    assertCaBundle(bundle, source);
    return bundle;
  }

  async createIfAbsent(bundle: CaBundle): Promise<CaBundle> {
    try {
      await retryTransient(() =>
        this.#apis.core.createNamespacedSecret({
          namespace: this.#namespace,
          body: {
            apiVersion: 'v1',
            kind: 'Secret',
            type: 'kubernetes.io/tls',
            metadata: { name: this.#name, namespace: this.#namespace, labels: { ...MESHRELAY_MANAGED_LABELS } },
            data: { 'tls.crt': encode(bundle.certPem), 'tls.key': encode(bundle.keyPem) },
          },
        }),
      );
      return bundle;
    } catch (err) {
      if (kubeErrorCode(err) !== 409) throw kubeFailure(err, `create Secret ${this.#namespace}/${this.#name}`);
    }
    const winner = await this.load();
    if (winner === undefined) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_INTERNAL',
        `relay CA Secret ${this.#namespace}/${this.#name} vanished while it was being created`,
      );
    }
    return winner;
  }
}

function encode(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

function decode(data: string | undefined): string | undefined {
  return data === undefined ? undefined : Buffer.from(data, 'base64').toString('utf8');
}
