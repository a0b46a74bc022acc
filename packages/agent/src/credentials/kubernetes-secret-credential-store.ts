import { createPublicKey } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { MeshrelayError } from '@meshrelay/api';
import { generateKeyPairAsync, type KeyPair } from '@meshrelay/certs';
import { describeCertificate, type ClientCredentials, type CredentialStore } from './credential-store.ts';
import { KubeHttpClient, statusCodeOf } from '../kube/kube-http.ts';

export interface KubernetesSecretCredentialStoreOptions {
  readonly kubeConfig: KubeConfig;
  readonly namespace: string;
  /** The Secret's name; every replica of the cluster's agent names the same one. */
  readonly name: string;
  readonly cluster: string;
  readonly logger: Logger;
  readonly now?: () => number;
  /** Writes tried before a run of 409 Conflicts is given up (default 5). */
  readonly maxWriteAttempts?: number;
}

/** The Secret's keys, as in a kubernetes.io/tls Secret plus the CA bundle. */
const KEY = 'tls.key';
const CERT = 'tls.crt';
const CA = 'ca.crt';

interface SecretObject {
  readonly metadata?: { readonly resourceVersion?: string };
  readonly data?: Readonly<Record<string, string>>;
}

/**
 * Keeps the client key and certificate in an Opaque Secret (`tls.key`, `tls.crt`,
 * `ca.crt`), so every replica and every restart of a pod whose state dir is
 * lost reuses them, and renewal keeps them fresh without the relay token.
 * Writes read the Secret, then replace it carrying the read resourceVersion
 * (create when absent); a 409 (a write based on a stale read, or a create that
 * lost a race) reads again and retries. Needs get, create and update on the
 * Secret in `namespace`.
 */
export class KubernetesSecretCredentialStore implements CredentialStore {
  readonly #opts: KubernetesSecretCredentialStoreOptions;
  readonly #http: KubeHttpClient;
  readonly #now: () => number;
  readonly #path: string;
  readonly #description: string;

  constructor(options: KubernetesSecretCredentialStoreOptions) {
    this.#opts = options;
    this.#http = new KubeHttpClient(options.kubeConfig);
    this.#now = options.now ?? Date.now;
    this.#path = `/api/v1/namespaces/${encodeURIComponent(options.namespace)}/secrets`;
    this.#description = `Secret ${options.namespace}/${options.name}`;
  }

  async keyPair(): Promise<KeyPair> {
    const stored = keyPairOf(await this.#read());
    if (stored) return stored;
    const generated = await generateKeyPairAsync();
    let kept: KeyPair = generated;
    // Another replica may have stored a key meanwhile: keep that one, so every replica uses one key.
    await this.#update((data) => {
      const existing = keyPairOf({ data });
      if (existing) {
        kept = existing;
        return undefined;
      }
      kept = generated;
      return { [KEY]: encode(generated.privateKeyPem) };
    });
    return kept;
  }

  async load(): Promise<ClientCredentials | undefined> {
    const secret = await this.#read();
    const keyPair = keyPairOf(secret);
    const certificatePem = decoded(secret, CERT);
    const caBundlePem = decoded(secret, CA);
    if (!keyPair || certificatePem === undefined || caBundlePem === undefined) return undefined;
    const fields = { cluster: this.#opts.cluster, secret: this.#description };
    try {
      const creds = describeCertificate(certificatePem, caBundlePem, keyPair);
      if (creds.cluster !== this.#opts.cluster) {
        this.#opts.logger.warn(
          { ...fields, certificateCluster: creds.cluster },
          'stored client certificate is for another cluster; registering again',
        );
        return undefined;
      }
      if (creds.notAfterMs <= this.#now()) {
        this.#opts.logger.warn(
          { ...fields, notAfter: new Date(creds.notAfterMs).toISOString() },
          'stored client certificate expired; registering again',
        );
        return undefined;
      }
      return creds;
    } catch (err) {
      this.#opts.logger.warn({ ...fields, err }, 'stored client certificate is unreadable; registering again');
      return undefined;
    }
  }

  async save(certificatePem: string, caBundlePem: string): Promise<ClientCredentials> {
    const keyPair = await this.keyPair();
    const creds = describeCertificate(certificatePem, caBundlePem, keyPair);
    if (creds.cluster !== this.#opts.cluster) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_CERTIFICATE',
        `issued certificate names cluster "${creds.cluster}", expected "${this.#opts.cluster}"`,
      );
    }
    // The key is written with the certificate: the pair must stay together even if another replica raced on the key.
    await this.#update(() => ({
      [KEY]: encode(keyPair.privateKeyPem),
      [CERT]: encode(certificatePem),
      [CA]: encode(caBundlePem),
    }));
    return creds;
  }

  async drop(): Promise<void> {
    await this.#update((data) => {
      if (data[CERT] === undefined && data[CA] === undefined) return undefined;
      return Object.fromEntries(Object.entries(data).filter(([key]) => key !== CERT && key !== CA));
    }, true);
  }

  async #read(): Promise<SecretObject | undefined> {
    try {
      return await this.#http.request<SecretObject>({
        method: 'GET',
        path: `${this.#path}/${encodeURIComponent(this.#opts.name)}`,
      });
    } catch (err) {
      if (statusCodeOf(err) === 404) return undefined;
      throw new MeshrelayError(
        'MESHRELAY_ERR_UNAVAILABLE',
        `cannot read ${this.#description}: ${(err as Error).message}`,
        { cause: err },
      );
    }
  }

  /**
   * Read-modify-write of the Secret's data. `change` gets the current data and
   * returns the new data (merged over the current unless `replaceData`), or
   * undefined to leave the Secret as it is.
   */
  async #update(
    change: (data: Readonly<Record<string, string>>) => Record<string, string> | undefined,
    replaceData = false,
  ): Promise<void> {
    const attempts = this.#opts.maxWriteAttempts ?? 5;
    for (let attempt = 1; ; attempt++) {
      const secret = await this.#read();
      const current = secret?.data ?? {};
      const next = change(current);
      if (next === undefined) return;
      try {
        await this.#write(secret, replaceData ? next : { ...current, ...next });
        return;
      } catch (err) {
        if (statusCodeOf(err) !== 409 || attempt >= attempts) {
          throw new MeshrelayError(
            'MESHRELAY_ERR_UNAVAILABLE',
            `cannot write ${this.#description}: ${(err as Error).message}`,
            { cause: err },
          );
        }
        this.#opts.logger.debug(
          { cluster: this.#opts.cluster, secret: this.#description, attempt },
          'credentials Secret changed since it was read; reading it again',
        );
      }
    }
  }

  async #write(secret: SecretObject | undefined, data: Record<string, string>): Promise<void> {
    const { namespace, name } = this.#opts;
    const resourceVersion = secret?.metadata?.resourceVersion;
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name,
        namespace,
        labels: { 'app.kubernetes.io/managed-by': 'meshrelay-agent' },
        ...(resourceVersion !== undefined ? { resourceVersion } : {}),
      },
      data,
    };
    if (secret === undefined) await this.#http.request({ method: 'POST', path: this.#path, body });
    else await this.#http.request({ method: 'PUT', path: `${this.#path}/${encodeURIComponent(name)}`, body });
  }
}

function encode(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

function decoded(secret: SecretObject | undefined, key: string): string | undefined {
  const value = secret?.data?.[key];
  return typeof value === 'string' && value !== '' ? Buffer.from(value, 'base64').toString('utf8') : undefined;
}

/** The key pair of the stored private key (public key derived from it), or undefined when absent or unreadable. */
function keyPairOf(secret: SecretObject | undefined): KeyPair | undefined {
  const privateKeyPem = decoded(secret, KEY);
  if (privateKeyPem === undefined) return undefined;
  try {
    const publicKeyPem = createPublicKey(privateKeyPem).export({ type: 'spki', format: 'pem' }).toString();
    return { privateKeyPem, publicKeyPem };
  } catch {
    return undefined;
  }
}
