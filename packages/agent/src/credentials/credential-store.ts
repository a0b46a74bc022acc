import { mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { MeshrelayError, isRecord } from '@meshrelay/api';
import { certificateInfo, generateKeyPairAsync, type KeyPair } from '@meshrelay/certs';
import { writeFileAtomic } from '../apply/output-writer.ts';

/** The agent's relay identity: its own key pair and the certificate the relay CA signed for it. */
export interface ClientCredentials {
  readonly cluster: string;
  readonly keyPair: KeyPair;
  readonly certificatePem: string;
  /** The relay CA bundle the agent trusts for the mTLS relay. */
  readonly caBundlePem: string;
  readonly notBeforeMs: number;
  readonly notAfterMs: number;
}

/**
 * Where the agent keeps its client key and certificate. Implementations: FileCredentialStore
 * (the state dir) and KubernetesSecretCredentialStore (a Secret every replica and restart shares).
 * Calls may come from one relay loop at a time; none may be made concurrently with itself.
 */
export interface CredentialStore {
  /** The persisted key pair, created (and persisted) on first use; the same pair until another is persisted. */
  keyPair(): Promise<KeyPair>;
  /**
   * The persisted credentials if they belong to this cluster and are valid now;
   * undefined otherwise (the caller registers).
   */
  load(): Promise<ClientCredentials | undefined>;
  /**
   * Persists a newly issued certificate for the stored key pair and returns the full credentials.
   * Throws MESHRELAY_ERR_CERTIFICATE when the certificate names another cluster.
   */
  save(certificatePem: string, caBundlePem: string): Promise<ClientCredentials>;
  /** Forgets the certificate (kept key); the next start registers again. */
  drop(): Promise<void>;
}

export interface FileCredentialStoreOptions {
  readonly stateDir: string;
  readonly cluster: string;
  readonly logger: Logger;
  readonly now?: () => number;
}

const KEY_FILE = 'client-key.json';
const CERT_FILE = 'client-certificate.json';

/**
 * Keeps the client key and certificate in the state dir (files 0600, dir 0700).
 * The private key is created once and never leaves the agent; the certificate
 * is replaced on registration and renewal, and dropped when the server refuses it.
 */
export class FileCredentialStore implements CredentialStore {
  readonly #opts: FileCredentialStoreOptions;
  readonly #now: () => number;

  constructor(options: FileCredentialStoreOptions) {
    this.#opts = options;
    this.#now = options.now ?? Date.now;
  }

  /** The persisted key pair, created (and persisted) on first use. */
  async keyPair(): Promise<KeyPair> {
    const file = path.join(this.#opts.stateDir, KEY_FILE);
    const stored = await readJson(file);
    if (isRecord(stored) && typeof stored['privateKeyPem'] === 'string' && typeof stored['publicKeyPem'] === 'string') {
      return { privateKeyPem: stored['privateKeyPem'], publicKeyPem: stored['publicKeyPem'] };
    }
    const pair = await generateKeyPairAsync();
    await this.#write(KEY_FILE, pair);
    return pair;
  }

  /**
   * The persisted credentials if they belong to this cluster and are valid now;
   * undefined otherwise (the caller registers).
   */
  async load(): Promise<ClientCredentials | undefined> {
    const stored = await readJson(path.join(this.#opts.stateDir, CERT_FILE));
    if (!isRecord(stored) || typeof stored['certificatePem'] !== 'string' || typeof stored['caBundlePem'] !== 'string')
      return undefined;
    try {
      const creds = describeCertificate(stored['certificatePem'], stored['caBundlePem'], await this.keyPair());
      if (creds.cluster !== this.#opts.cluster) {
        this.#opts.logger.warn(
          { cluster: this.#opts.cluster, certificateCluster: creds.cluster },
          'persisted client certificate is for another cluster; registering again',
        );
        return undefined;
      }
      if (creds.notAfterMs <= this.#now()) {
        this.#opts.logger.warn(
          { cluster: creds.cluster, notAfter: new Date(creds.notAfterMs).toISOString() },
          'persisted client certificate expired; registering again',
        );
        return undefined;
      }
      return creds;
    } catch (err) {
      this.#opts.logger.warn(
        { err, cluster: this.#opts.cluster },
        'persisted client certificate is unreadable; registering again',
      );
      return undefined;
    }
  }

  /** Persists a newly issued certificate for the stored key pair and returns the full credentials. */
  async save(certificatePem: string, caBundlePem: string): Promise<ClientCredentials> {
    const creds = describeCertificate(certificatePem, caBundlePem, await this.keyPair());
    if (creds.cluster !== this.#opts.cluster) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_CERTIFICATE',
        `issued certificate names cluster "${creds.cluster}", expected "${this.#opts.cluster}"`,
      );
    }
    await this.#write(CERT_FILE, { certificatePem, caBundlePem });
    return creds;
  }

  /** Forgets the certificate (kept key); the next start registers again. */
  async drop(): Promise<void> {
    await rm(path.join(this.#opts.stateDir, CERT_FILE), { force: true });
  }

  async #write(name: string, value: unknown): Promise<void> {
    await mkdir(this.#opts.stateDir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(path.join(this.#opts.stateDir, name), JSON.stringify(value));
  }
}

/** The credentials a certificate PEM describes (cluster = its CN); throws when the PEM is not a certificate. */
export function describeCertificate(certificatePem: string, caBundlePem: string, keyPair: KeyPair): ClientCredentials {
  const info = certificateInfo(certificatePem);
  return {
    cluster: info.subjectCN ?? '',
    keyPair,
    certificatePem,
    caBundlePem,
    notBeforeMs: info.notBefore.getTime(),
    notAfterMs: info.notAfter.getTime(),
  };
}

/**
 * True when less than a third of the certificate's lifetime remains at `nowMs`:
 * time to renew (early enough that a few failed attempts still end well).
 */
export function needsRenewal(creds: Pick<ClientCredentials, 'notBeforeMs' | 'notAfterMs'>, nowMs: number): boolean {
  const lifetime = creds.notAfterMs - creds.notBeforeMs;
  return creds.notAfterMs - nowMs < lifetime / 3;
}

async function readJson(file: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as unknown;
  } catch {
    return undefined;
  }
}
