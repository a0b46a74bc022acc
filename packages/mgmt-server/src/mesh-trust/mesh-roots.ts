// Where mesh roots come from and where their keys are kept. Every root the plane uses is stored
// under an index through a CaStore (file `<stateDir>/mesh-ca/root-<n>/mesh-root-ca.json`, or the
// Secret `meshrelay-mesh-root-ca-<n>`), whose createIfAbsent is atomic: replicas that make root n
// at the same moment all end with the one that was stored first. An operator's root (secretRef)
// is copied into the same store, so an old root still signs during a rotation after the operator
// replaced the Secret's content.

import { MeshrelayError } from '@meshrelay/api';
import { certificateInfo, createMeshRoot, rootIdOf, type CaBundle, type CaStore } from '@meshrelay/certs';
import type { CertOptions } from '@meshrelay/registry';
import type { MeshRoot } from './rotation-state.ts';

/** Reads an operator's root CA Secret; throws naming the Secret and what is wrong with it. */
export type RootSecretReader = (ref: { readonly namespace: string; readonly name: string }) => Promise<CaBundle>;

const ROOT_COMMON_NAME = 'meshrelay mesh root';
// Gloo's defaults for a generated root.
const DEFAULT_ROOT_TTL_DAYS = 365;
const DEFAULT_RSA_BITS = 4096;
const MAX_ADOPT_TRIES = 8;

export class MeshRoots {
  readonly #store: (index: number) => CaStore;
  readonly #bundles = new Map<number, CaBundle>();

  constructor(store: (index: number) => CaStore) {
    this.#store = store;
  }

  /** Root `index`, made from `options` unless one is stored already (then the stored one). */
  async ensureGenerated(index: number, options: CertOptions, now: Date): Promise<MeshRoot> {
    const store = this.#store(index);
    const stored =
      (await store.load()) ??
      (await store.createIfAbsent(
        createMeshRoot({
          commonName: ROOT_COMMON_NAME,
          ttlDays: options.ttlDays ?? DEFAULT_ROOT_TTL_DAYS,
          rsaKeyBits: options.rsaKeySizeBytes ?? DEFAULT_RSA_BITS,
          ...(options.orgName !== undefined ? { orgName: options.orgName } : {}),
          now,
        }),
      ));
    return this.#remember(index, stored, 'generated');
  }

  /**
   * Keeps the operator's root under the first index from `index` on that is free or holds it
   * already (an index may hold a root made by a rotation that never got written to the state).
   */
  async adopt(index: number, bundle: CaBundle): Promise<MeshRoot> {
    const id = rootIdOf(bundle.certPem);
    for (let at = index; at < index + MAX_ADOPT_TRIES; at++) {
      const stored = await this.#store(at).createIfAbsent(bundle);
      if (rootIdOf(stored.certPem) === id) return this.#remember(at, stored, 'secretRef');
    }
    throw new MeshrelayError(
      'MESHRELAY_ERR_UNAVAILABLE',
      `mesh root store: indexes ${index} to ${index + MAX_ADOPT_TRIES - 1} all hold other roots`,
    );
  }

  /** The key and certificate of a root the state names; throws when its store lost it. */
  async bundle(root: MeshRoot): Promise<CaBundle> {
    const cached = this.#bundles.get(root.index);
    if (cached && rootIdOf(cached.certPem) === root.id) return cached;
    const stored = await this.#store(root.index).load();
    if (stored === undefined || rootIdOf(stored.certPem) !== root.id) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_UNAVAILABLE',
        `mesh root ${root.id} (index ${root.index}) is not in the mesh root store; restore it from a backup`,
      );
    }
    this.#bundles.set(root.index, stored);
    return stored;
  }

  #remember(index: number, bundle: CaBundle, origin: MeshRoot['origin']): MeshRoot {
    this.#bundles.set(index, bundle);
    return {
      index,
      id: rootIdOf(bundle.certPem),
      certPem: bundle.certPem,
      notAfter: certificateInfo(bundle.certPem).notAfter.toISOString(),
      origin,
    };
  }
}
