/**
 * Output naming. Names are deterministic functions of the Gloo resource they come from:
 *
 *   VirtualDestination N      -> ServiceEntry `N-vd`, DestinationRule `N-vd` (one per host:
 *                                `N-vd` for the first host, `N-vd-<i>` for host i > 0)
 *   RouteTable N              -> VirtualService `N-rt`
 *   AccessPolicy N on Service S -> AuthorizationPolicy `N-S-ap` (in S's namespace; when that
 *                                differs from N's namespace: `N-<N's namespace>-S-ap`)
 *   AccessPolicy N, workload selector i -> AuthorizationPolicy `N-w<i>-ap` (same namespace rule)
 *
 * A name longer than 253 characters is cut and suffixed with a hash of the full name.
 */
import { createHash } from 'node:crypto';
import { OWNER_LABEL, OWNER_LABEL_VALUE } from '@meshrelay/api';

const MAX_NAME = 253;

export function outputName(...parts: string[]): string {
  const full = parts.join('-');
  if (full.length <= MAX_NAME) return full;
  const digest = createHash('sha256').update(full).digest('hex').slice(0, 10);
  return `${full.slice(0, MAX_NAME - digest.length - 1).replace(/[-.]+$/, '')}-${digest}`;
}

export function virtualDestinationOutputName(vdName: string, hostIndex = 0): string {
  return hostIndex === 0 ? outputName(vdName, 'vd') : outputName(vdName, 'vd', String(hostIndex));
}

export function routeTableOutputName(rtName: string): string {
  return outputName(rtName, 'rt');
}

export function accessPolicyOutputName(
  policy: { name: string; namespace: string },
  targetNamespace: string,
  target: string,
): string {
  const parts = policy.namespace === targetNamespace ? [policy.name] : [policy.name, policy.namespace];
  return outputName(...parts, target, 'ap');
}

/** Metadata every output carries: the owner label lets an applier prune only what it owns. */
export function outputMetadata(
  name: string,
  namespace: string,
): { name: string; namespace: string; labels: Record<string, string> } {
  return { name, namespace, labels: { [OWNER_LABEL]: OWNER_LABEL_VALUE } };
}
