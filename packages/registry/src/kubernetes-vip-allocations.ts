import { MeshrelayError } from '@meshrelay/api';
import {
  MESHRELAY_MANAGED_LABELS,
  VIP_ALLOCATIONS_CONFIGMAP,
  kubeErrorCode,
  kubeFailure,
  retryTransient,
  type KubernetesRegistryApis,
} from './kubernetes-objects.ts';
import type { VipAllocationStore } from './vip-allocations.ts';
import {
  decodeVipTable,
  encodeVipTable,
  reconcileVips,
  vipAddresses,
  type VipAllocation,
  type VipDemand,
} from './vip-ownership.ts';
import type { VipPools } from '@meshrelay/translator';

const DATA_KEY = 'allocations.json';
const WRITE_ATTEMPTS = 8;

/**
 * VirtualDestination VIP allocations (DESIGN §2) in the ConfigMap `relay-vip-allocations` of the
 * management namespace (one JSON map under `allocations.json`: VIP keys contain "/", which
 * ConfigMap keys may not). Writes are create-if-absent or resourceVersion-guarded replaces; on 409
 * the replica re-reads and reconciles again on top of the winner's map, so two replicas never hand
 * out the same address. An allocation's address never changes; it is removed only when its owners
 * are gone (vip-ownership.ts). A request that would change nothing in the last table this replica
 * saw is answered from memory, without the API.
 */
export class KubernetesVipAllocations implements VipAllocationStore {
  readonly #apis: KubernetesRegistryApis;
  readonly #namespace: string;
  readonly #cidr: string | Partial<VipPools>;
  #known: ReadonlyMap<string, VipAllocation> = new Map();
  #chain: Promise<unknown> = Promise.resolve();

  constructor(apis: KubernetesRegistryApis, namespace: string, cidr: string | Partial<VipPools>) {
    this.#apis = apis;
    this.#namespace = namespace;
    this.#cidr = cidr;
  }

  reconcile(demand: VipDemand): Promise<ReadonlyMap<string, string>> {
    const run = async (): Promise<ReadonlyMap<string, string>> => {
      if (encodeVipTable(reconcileVips(this.#known, demand, this.#cidr)) === encodeVipTable(this.#known))
        return vipAddresses(this.#known);
      for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
        const { map, resourceVersion } = await this.#read();
        const next = reconcileVips(map, demand, this.#cidr);
        if (encodeVipTable(next) === encodeVipTable(map) || (await this.#write(next, resourceVersion))) {
          this.#known = next;
          return vipAddresses(next);
        }
      }
      throw new MeshrelayError(
        'MESHRELAY_ERR_UNAVAILABLE',
        `VIP allocation ConfigMap ${this.#namespace}/${VIP_ALLOCATIONS_CONFIGMAP} kept changing under concurrent writers`,
      );
    };
    const result = this.#chain.then(run, run);
    this.#chain = result.catch(() => undefined);
    return result;
  }

  async #read(): Promise<{ map: Map<string, VipAllocation>; resourceVersion: string | undefined }> {
    let configMap;
    try {
      configMap = await retryTransient(() =>
        this.#apis.core.readNamespacedConfigMap({ name: VIP_ALLOCATIONS_CONFIGMAP, namespace: this.#namespace }),
      );
    } catch (err) {
      if (kubeErrorCode(err) === 404) return { map: new Map(), resourceVersion: undefined };
      throw kubeFailure(err, `read ConfigMap ${this.#namespace}/${VIP_ALLOCATIONS_CONFIGMAP}`);
    }
    const text = configMap.data?.[DATA_KEY] ?? '{}';
    const map = decodeVipTable(text, `ConfigMap ${this.#namespace}/${VIP_ALLOCATIONS_CONFIGMAP}`);
    return { map, resourceVersion: configMap.metadata?.resourceVersion };
  }

  /** True when written; false when another writer got there first (409). */
  async #write(map: ReadonlyMap<string, VipAllocation>, resourceVersion: string | undefined): Promise<boolean> {
    const name = VIP_ALLOCATIONS_CONFIGMAP;
    const namespace = this.#namespace;
    const body = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name,
        namespace,
        labels: { ...MESHRELAY_MANAGED_LABELS },
        ...(resourceVersion ? { resourceVersion } : {}),
      },
      data: { [DATA_KEY]: encodeVipTable(map) },
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
