import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { MeshrelayError } from '@meshrelay/api';
import { KubeHttpClient, statusCodeOf } from '../kube/kube-http.ts';
import { readIfPresent, replaceFile } from './atomic-file.ts';
import { CACERTS_KEYS, certificateBlocks, type CacertsFiles, type CacertsKey, type CacertsStore } from './cacerts.ts';

const INTERMEDIATE_KEYS: readonly CacertsKey[] = ['ca-key.pem', 'ca-cert.pem', 'cert-chain.pem'];

/**
 * `cacerts` as a directory of the four files (the file provider's istiod mounts it, or reads it as a plugged-in
 * CA directory). Each file is replaced atomically. Since the four cannot change together, root-cert.pem is
 * written first when it gains a root and last when it loses one: a root that signs the live chain is never
 * missing from it.
 */
export class DirectoryCacertsStore implements CacertsStore {
  readonly #dir: string;
  readonly #replace: typeof replaceFile;

  /** `replace` writes one file atomically (tests pass one that records the order). */
  constructor(dir: string, replace: typeof replaceFile = replaceFile) {
    this.#dir = dir;
    this.#replace = replace;
  }

  get description(): string {
    return `directory ${this.#dir}`;
  }

  async load(): Promise<CacertsFiles | undefined> {
    const texts = await Promise.all(CACERTS_KEYS.map((key) => readIfPresent(path.join(this.#dir, key))));
    if (texts.some((text) => text === undefined || text === '')) return undefined;
    return Object.fromEntries(CACERTS_KEYS.map((key, i) => [key, texts[i] as string])) as unknown as CacertsFiles;
  }

  async write(next: CacertsFiles, previous: CacertsFiles | undefined): Promise<void> {
    const prevRoots = new Set(certificateBlocks(previous?.['root-cert.pem'] ?? ''));
    const gainsRoot = certificateBlocks(next['root-cert.pem']).some((root) => !prevRoots.has(root));
    const changed = (key: CacertsKey): boolean => previous?.[key] !== next[key];
    const write = (key: CacertsKey): Promise<void> =>
      // The key file is readable by its owner only; istiod runs as the agent's user or mounts a copy.
      this.#replace(path.join(this.#dir, key), next[key], key === 'ca-key.pem' ? 0o600 : 0o644);
    if (gainsRoot && changed('root-cert.pem')) await write('root-cert.pem');
    for (const key of INTERMEDIATE_KEYS) if (changed(key)) await write(key);
    if (!gainsRoot && changed('root-cert.pem')) await write('root-cert.pem');
  }
}

export interface SecretCacertsStoreOptions {
  readonly kubeConfig: KubeConfig;
  /** The Istio namespace (`--istio-namespace`). */
  readonly namespace: string;
  /** Default `cacerts`, the name istiod looks for. */
  readonly name?: string;
  /** Writes tried before a run of 409 Conflicts is given up (default 5). */
  readonly maxWriteAttempts?: number;
}

interface SecretObject {
  readonly metadata?: Record<string, unknown> & { readonly resourceVersion?: string };
  readonly type?: string;
  readonly data?: Readonly<Record<string, string>>;
}

/**
 * `cacerts` as the Kubernetes Secret istiod reads: data holds exactly the four keys (never `istio-generated`,
 * which would make istiod treat it as its own self-signed CA). Created when absent; otherwise replaced carrying
 * the read resourceVersion and the Secret's other metadata (labels, annotations, owners) as they were. One
 * write changes all four keys at once. Needs get, create and update on Secrets in the Istio namespace.
 */
export class SecretCacertsStore implements CacertsStore {
  readonly #opts: SecretCacertsStoreOptions;
  readonly #http: KubeHttpClient;
  readonly #path: string;
  readonly #name: string;

  constructor(options: SecretCacertsStoreOptions) {
    this.#opts = options;
    this.#http = new KubeHttpClient(options.kubeConfig);
    this.#name = options.name ?? 'cacerts';
    this.#path = `/api/v1/namespaces/${encodeURIComponent(options.namespace)}/secrets`;
  }

  get description(): string {
    return `Secret ${this.#opts.namespace}/${this.#name}`;
  }

  async load(): Promise<CacertsFiles | undefined> {
    const data = (await this.#read())?.data ?? {};
    const texts = CACERTS_KEYS.map((key) => {
      const value = data[key];
      return typeof value === 'string' ? Buffer.from(value, 'base64').toString('utf8') : '';
    });
    if (texts.some((text) => text === '')) return undefined;
    return Object.fromEntries(CACERTS_KEYS.map((key, i) => [key, texts[i] as string])) as unknown as CacertsFiles;
  }

  async write(next: CacertsFiles): Promise<void> {
    const data = Object.fromEntries(
      CACERTS_KEYS.map((key) => [key, Buffer.from(next[key], 'utf8').toString('base64')]),
    );
    const attempts = this.#opts.maxWriteAttempts ?? 5;
    for (let attempt = 1; ; attempt++) {
      const secret = await this.#read();
      try {
        await this.#put(secret, data);
        return;
      } catch (err) {
        if (statusCodeOf(err) !== 409 || attempt >= attempts)
          throw new MeshrelayError(
            'MESHRELAY_ERR_UNAVAILABLE',
            `cannot write ${this.description}: ${(err as Error).message}`,
            { cause: err },
          );
      }
    }
  }

  async #read(): Promise<SecretObject | undefined> {
    try {
      return await this.#http.request<SecretObject>({
        method: 'GET',
        path: `${this.#path}/${encodeURIComponent(this.#name)}`,
      });
    } catch (err) {
      if (statusCodeOf(err) === 404) return undefined;
      throw new MeshrelayError(
        'MESHRELAY_ERR_UNAVAILABLE',
        `cannot read ${this.description}: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
  }

  async #put(secret: SecretObject | undefined, data: Record<string, string>): Promise<void> {
    if (secret === undefined) {
      const body = {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'Opaque',
        metadata: {
          name: this.#name,
          namespace: this.#opts.namespace,
          labels: { 'app.kubernetes.io/managed-by': 'meshrelay-agent' },
        },
        data,
      };
      await this.#http.request({ method: 'POST', path: this.#path, body });
      return;
    }
    // The read metadata goes back whole (with its resourceVersion, so a concurrent change is a 409, not lost).
    const body = { apiVersion: 'v1', kind: 'Secret', type: secret.type ?? 'Opaque', metadata: secret.metadata, data };
    await this.#http.request({ method: 'PUT', path: `${this.#path}/${encodeURIComponent(this.#name)}`, body });
  }
}
