// A relay token registers one key. The first registration with a token binds it to the public key
// of the certificate it got; the same key may register with that token again (an agent retrying,
// or whose certificate expired or was revoked: it keeps its key), another key may not. The
// bindings live in the shared relay state, so every replica applies them.
import { createHash, X509Certificate } from 'node:crypto';
import type { Logger } from 'pino';
import type { SharedDocumentStore } from '@meshrelay/registry';

/** Who registered with a token first: its key's digest, when and from which network. */
export interface TokenBinding {
  /** sha256 (hex) of the token, as the registry stores it. */
  readonly token: string;
  /** sha256 (hex) of the certificate's SubjectPublicKeyInfo. */
  readonly key: string;
  readonly boundAt: string;
  readonly network: string;
}

export type TokenClaim =
  { readonly kind: 'first' | 'same' } | { readonly kind: 'reused'; readonly binding: TokenBinding };

/**
 * Bindings kept per cluster, newest first: the current token, the one a rotation replaced (valid
 * for the overlap), and a few older ones, so an old token presented with another key is still
 * recognised as used.
 */
const KEPT_PER_CLUSTER = 4;

/** sha256 (hex) of a certificate's public key (SubjectPublicKeyInfo, DER). */
export function publicKeyDigest(certPem: string): string {
  const spki = new X509Certificate(certPem).publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(spki).digest('hex');
}

/**
 * The token bindings of every cluster, one shared document per cluster; claims of one cluster are
 * serialised in this process. Across replicas the documents are last-write-wins: a claim reads the
 * document back after writing it and loses when another key's binding of the same token replaced
 * its own. Two first claims on two replicas whose read-backs both come before the other's write
 * both pass (the later write stays bound): a window of one round trip to the shared state.
 */
export class TokenBindings {
  readonly #documents: SharedDocumentStore;
  readonly #logger: Logger;
  readonly #chains = new Map<string, Promise<unknown>>();

  constructor(documents: SharedDocumentStore, logger: Logger) {
    this.#documents = documents;
    this.#logger = logger;
  }

  /** Binds `token` to `key` for `cluster` unless it is bound to another key already. */
  claim(cluster: string, binding: TokenBinding): Promise<TokenClaim> {
    const previous = this.#chains.get(cluster) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.#claim(cluster, binding));
    this.#chains.set(cluster, next);
    void next
      .finally(() => {
        if (this.#chains.get(cluster) === next) this.#chains.delete(cluster);
      })
      .catch(() => undefined);
    return next;
  }

  /** Drops a deregistered cluster's bindings (a registration under its name gets new tokens). */
  async forget(cluster: string): Promise<void> {
    await this.#documents.delete(cluster);
  }

  async #claim(cluster: string, binding: TokenBinding): Promise<TokenClaim> {
    const held = await this.#read(cluster);
    const known = held.find((b) => b.token === binding.token);
    if (known) return known.key === binding.key ? { kind: 'same' } : { kind: 'reused', binding: known };
    const kept = [binding, ...held].slice(0, KEPT_PER_CLUSTER);
    await this.#documents.put(cluster, Buffer.from(JSON.stringify(kept)));
    const stored = (await this.#read(cluster)).find((b) => b.token === binding.token);
    if (stored && stored.key !== binding.key) return { kind: 'reused', binding: stored };
    return { kind: 'first' };
  }

  async #read(cluster: string): Promise<TokenBinding[]> {
    const body = await this.#documents.get(cluster);
    if (body === undefined) return [];
    try {
      const parsed: unknown = JSON.parse(body.toString('utf8'));
      return Array.isArray(parsed) ? parsed.filter(isBinding) : [];
    } catch (err) {
      // An unreadable document binds nothing; the next registration writes a good one.
      this.#logger.warn(
        { err, cluster, location: this.#documents.location },
        'unreadable relay token bindings; starting them again',
      );
      return [];
    }
  }
}

function isBinding(value: unknown): value is TokenBinding {
  if (typeof value !== 'object' || value === null) return false;
  const { token, key, boundAt, network } = value as Record<string, unknown>;
  return (
    typeof token === 'string' && typeof key === 'string' && typeof boundAt === 'string' && typeof network === 'string'
  );
}
