import { MeshrelayError } from '@meshrelay/api';
import { allocateVips } from '@meshrelay/translator';
import {
  MESHRELAY_MANAGED_LABELS, VIP_ALLOCATIONS_CONFIGMAP, kubeErrorCode, kubeFailure, retryTransient, type KubernetesRegistryApis,
} from './kubernetes-objects.ts';
import type { VipAllocationStore } from './vip-allocations.ts';

const DATA_KEY = 'allocations.json';
const WRITE_ATTEMPTS = 8;

/**
 * VirtualDestination VIP allocations (DESIGN §2) in the ConfigMap `relay-vip-allocations` of the
 * management namespace (one JSON map under `allocations.json`: VIP keys contain "/", which
 * ConfigMap keys may not). Writes are create-if-absent or resourceVersion-guarded replaces; on 409
 * the replica re-reads and allocates again on top of the winner's map, so two replicas never hand
 * out the same address. Allocations are never changed or removed, so a request whose keys are all
 * in the last map this replica saw is answered from memory, without the API.
 */
export class KubernetesVipAllocations implements VipAllocationStore {
  readonly #apis: KubernetesRegistryApis;
  readonly #namespace: string;
  readonly #cidr: string;
  #known = new Map<string, string>();
  #chain: Promise<unknown> = Promise.resolve();

  constructor(apis: KubernetesRegistryApis, namespace: string, cidr: string) {
    this.#apis = apis;
    this.#namespace = namespace;
    this.#cidr = cidr;
  }

  ensure(keys: readonly string[]): Promise<ReadonlyMap<string, string>> {
    const run = async (): Promise<ReadonlyMap<string, string>> => {
      if (keys.every((k) => this.#known.has(k))) return new Map(this.#known);
      for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
        const { map, resourceVersion } = await this.#read();
        const next = allocateVips(map, keys, this.#cidr);
        if (next.size === map.size || (await this.#write(next, resourceVersion))) {
          this.#known = new Map(next);
          return next;
        }
      }
      throw new MeshrelayError('MESHRELAY_ERR_UNAVAILABLE', `VIP allocation ConfigMap ${this.#namespace}/${VIP_ALLOCATIONS_CONFIGMAP} kept changing under concurrent writers`);
    };
    const result = this.#chain.then(run, run);
    this.#chain = result.catch(() => undefined);
    return result;
  }

  async #read(): Promise<{ map: Map<string, string>; resourceVersion: string | undefined }> {
    let configMap;
    try {
      configMap = await retryTransient(() => this.#apis.core.readNamespacedConfigMap({ name: VIP_ALLOCATIONS_CONFIGMAP, namespace: this.#namespace }));
    } catch (err) {
      if (kubeErrorCode(err) === 404) return { map: new Map(), resourceVersion: undefined };
      throw kubeFailure(err, `read ConfigMap ${this.#namespace}/${VIP_ALLOCATIONS_CONFIGMAP}`);
    }
    const text = configMap.data?.[DATA_KEY] ?? '{}';
    try {
      return { map: new Map(Object.entries(JSON.parse(text) as Record<string, string>)), resourceVersion: configMap.metadata?.resourceVersion };
    } catch (err) {
      throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `VIP allocation ConfigMap ${this.#namespace}/${VIP_ALLOCATIONS_CONFIGMAP} is corrupt; refusing to reallocate addresses`, { cause: err });
    }
  }

  /** True when written; false when another writer got there first (409). */
  async #write(map: ReadonlyMap<string, string>, resourceVersion: string | undefined): Promise<boolean> {
    const name = VIP_ALLOCATIONS_CONFIGMAP;
    const namespace = this.#namespace;
    const body = {
      apiVersion: 'v1', kind: 'ConfigMap',
      metadata: { name, namespace, labels: { ...MESHRELAY_MANAGED_LABELS }, ...(resourceVersion ? { resourceVersion } : {}) },
      data: { [DATA_KEY]: `${JSON.stringify(Object.fromEntries([...map].sort()), null, 2)}\n` },
    };
    try {
      if (resourceVersion === undefined) await this.#apis.core.createNamespacedConfigMap({ namespace, body });
      else await this.#apis.core.replaceNamespacedConfigMap({ name, namespace, body });
      return true;
    } catch (err) {
      if (kubeErrorCode(err) === 409) return false;
      throw kubeFailure(err, `write ConfigMap ${namespace}/${name}`);
    }
  }
}
