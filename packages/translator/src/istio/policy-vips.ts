/**
 * Semantic addresses: besides its default VIP, a VirtualDestination may opt in to one address per
 * balancing policy (round robin, closest), each under a host of its own, and to one address per
 * backing instance that stays with the instance wherever it runs. A caller picks the behaviour by
 * the host (and address) it dials. Both are opt-in per destination because each policy host
 * repeats the default entry: on for every destination they made each cluster's output about 3.2
 * times larger. Every address is an ordinary VIP allocation: keyed here, allocated and released by
 * the same store, so it is equal in every cluster and stable across restarts. Pure.
 */
import { KINDS, isKind, type InputSnapshot, type Resource } from '@meshrelay/api';
import { joinPath, type InputProblem } from '../gloo/schema-errors.ts';
import type { VirtualDestinationModel } from '../gloo/virtual-destinations.ts';

export type BalancingPolicy = 'round-robin' | 'closest';

export const BALANCING_POLICIES: readonly BalancingPolicy[] = ['round-robin', 'closest'];

/** The first DNS label of a policy's hosts: `rr.<host>`, `closest.<host>`. */
export const POLICY_HOST_LABEL: Readonly<Record<BalancingPolicy, string>> = {
  'round-robin': 'rr',
  closest: 'closest',
};

/** VirtualDestination annotation that turns its instance addresses on ("true"). */
export const INSTANCE_ADDRESSES_ANNOTATION = 'meshrelay.io/instance-addresses';

/** VirtualDestination annotation that turns its round-robin and closest addresses on ("true"). */
export const POLICY_ADDRESSES_ANNOTATION = 'meshrelay.io/policy-addresses';

/** Each address annotation and what its value turns on or off (for the problem an operator reads). */
const ADDRESS_ANNOTATIONS: readonly { readonly name: string; readonly what: string }[] = [
  { name: POLICY_ADDRESSES_ANNOTATION, what: 'round-robin and closest addresses' },
  { name: INSTANCE_ADDRESSES_ANNOTATION, what: 'instance addresses' },
];

/** Pod label naming the instance: the identity its address is kept under when it moves. */
export const INSTANCE_LABEL = 'meshrelay.io/instance';

const INSTANCE_KEY_PREFIX = 'instance:';

/** A DNS label (RFC 1123): an instance id becomes the first label of a host. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The allocation key of a VirtualDestination's policy address (`<policy>:<namespace>/<name>`). */
export function policyVipKey(policy: BalancingPolicy, destinationKey: string): string {
  return `${policy}:${destinationKey}`;
}

/** The allocation key of an instance address: the instance's namespace and id, not where it runs. */
export function instanceVipKey(namespace: string, id: string): string {
  return `${INSTANCE_KEY_PREFIX}${namespace}/${id}`;
}

/** Which pool a key is allocated from (namespaces and names contain no ':', so prefixes cannot clash). */
export function keyPool(key: string): BalancingPolicy | 'instance' | 'default' {
  if (key.startsWith(INSTANCE_KEY_PREFIX)) return 'instance';
  for (const policy of BALANCING_POLICIES) if (key.startsWith(`${policy}:`)) return policy;
  return 'default';
}

/** The instance id a Pod's labels give, when it is one a host can carry. */
export function instanceId(labels: Readonly<Record<string, string>> | undefined): string | undefined {
  const id = labels?.[INSTANCE_LABEL];
  return id !== undefined && DNS_LABEL.test(id) ? id : undefined;
}

/**
 * Whether an address annotation is on: "true" is, absent or "false" is not. Any other value counts
 * as on (and is a problem on the destination's status): a typo such as "True" on a destination
 * whose addresses callers already dial must not release them and break those calls, while a typo
 * meant as off only leaves addresses in place until it is corrected.
 */
function annotationOn(resource: Resource, name: string): boolean {
  const value = resource.metadata.annotations?.[name];
  return value !== undefined && value !== 'false';
}

/** Whether a VirtualDestination resource asks for instance addresses. */
export function wantsInstanceAddresses(resource: Resource): boolean {
  return annotationOn(resource, INSTANCE_ADDRESSES_ANNOTATION);
}

/** Whether a VirtualDestination resource asks for its round-robin and closest addresses. */
export function wantsPolicyAddresses(resource: Resource): boolean {
  return annotationOn(resource, POLICY_ADDRESSES_ANNOTATION);
}

/**
 * The address annotations of a VirtualDestination set to anything but "true" or "false". Such a
 * value keeps its addresses on (see annotationOn); the problem says so, so a typo is seen on the
 * destination's status instead of silently meaning either.
 */
export function addressAnnotationProblems(resource: Resource): InputProblem[] {
  const annotations = resource.metadata.annotations;
  if (annotations === undefined) return [];
  return ADDRESS_ANNOTATIONS.flatMap(({ name, what }) => {
    const value = annotations[name];
    if (value === undefined || value === 'true' || value === 'false') return [];
    return [
      {
        path: joinPath('metadata.annotations', name),
        message: `is ${JSON.stringify(value)}, not "true" or "false": ${what} stay on until it is one of them`,
      },
    ];
  });
}

/**
 * The keys one input claims: for each VirtualDestination its default key and, when it opts in, its
 * round-robin and closest keys; for each Pod labelled with an instance id, that instance's key. The
 * cluster that runs an instance claims its address, so the address is kept while any cluster runs
 * it and released once none does. A destination that stops opting in stops claiming its policy
 * keys, so they are released on the same evidence as a destination that is deleted.
 */
export function inputAddressKeys(snapshot: InputSnapshot): string[] {
  const keys = new Set<string>();
  for (const r of snapshot.resources) {
    if (isKind(r, KINDS.VirtualDestination)) {
      const key = `${r.metadata.namespace ?? ''}/${r.metadata.name}`;
      keys.add(key);
      if (wantsPolicyAddresses(r)) for (const policy of BALANCING_POLICIES) keys.add(policyVipKey(policy, key));
    } else if (isKind(r, KINDS.Pod)) {
      const id = instanceId(r.metadata.labels);
      if (id !== undefined) keys.add(instanceVipKey(r.metadata.namespace ?? '', id));
    }
  }
  return [...keys];
}

/** One instance of a VirtualDestination with an address, and where its endpoints are. */
export interface InstanceAddress {
  readonly id: string;
  readonly address: string;
  /** The backends (clusters) running it and, per backend, the indexes of its endpoints. */
  readonly placements: readonly { readonly backend: number; readonly endpoints: readonly number[] }[];
}

/** The addresses of one VirtualDestination beyond its default VIP (only those allocated). */
export interface SemanticAddresses {
  readonly policies: readonly { readonly policy: BalancingPolicy; readonly address: string }[];
  readonly instances: readonly InstanceAddress[];
}

/**
 * The allocated policy and instance addresses of `vd`, each kind only when it opts in, sorted. An
 * address still allocated to a destination that no longer opts in (kept until its release) is not
 * used: the hosts go at once.
 */
export function semanticAddressesOf(vd: VirtualDestinationModel, vips: ReadonlyMap<string, string>): SemanticAddresses {
  const policies = !wantsPolicyAddresses(vd.owned.resource)
    ? []
    : BALANCING_POLICIES.flatMap((policy) => {
        const address = vips.get(policyVipKey(policy, vd.key));
        return address === undefined ? [] : [{ policy, address }];
      });
  if (!wantsInstanceAddresses(vd.owned.resource)) return { policies, instances: [] };
  const byId = new Map<string, Map<number, number[]>>();
  vd.backends.forEach((backend, b) => {
    backend.endpoints.forEach((ep, e) => {
      const id = instanceId(ep.labels);
      if (id === undefined || !vips.has(instanceVipKey(backend.service.namespace, id))) return;
      const placements = byId.get(id) ?? new Map<number, number[]>();
      placements.set(b, [...(placements.get(b) ?? []), e]);
      byId.set(id, placements);
    });
  });
  const instances = [...byId.keys()].sort().map((id) => {
    const placements = byId.get(id) as Map<number, number[]>;
    const namespace = vd.backends[[...placements.keys()][0] as number]?.service.namespace ?? '';
    return {
      id,
      address: vips.get(instanceVipKey(namespace, id)) as string,
      placements: [...placements].map(([backend, endpoints]) => ({ backend, endpoints })),
    };
  });
  return { policies, instances };
}

/** A digest-ready description of the addresses (what the outputs built from them read). */
export function semanticAddressesKey(addresses: SemanticAddresses): string {
  return JSON.stringify(addresses);
}
