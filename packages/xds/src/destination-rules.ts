import { isRecord, type Resource } from '@meshrelay/api';
import { resolveHost } from './names.ts';

export type Policy = Record<string, unknown>;

/** A DestinationRule subset: its name, labels, and its own traffic policy. */
export interface Subset {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly trafficPolicy: Policy | undefined;
}

/** The DestinationRule that applies to a host, as istiod picks one. */
export interface HostRule {
  readonly resource: Resource;
  readonly trafficPolicy: Policy | undefined;
  readonly subsets: readonly Subset[];
}

/**
 * One DestinationRule per host (exact host; the first by namespace/name when several
 * claim it — istiod merges only rules without conflicting subsets, which the translator
 * never emits). Wildcard hosts are not matched: the translator emits exact hosts.
 */
export function indexDestinationRules(output: readonly Resource[], clusterDomain: string): Map<string, HostRule> {
  const rules = output
    .filter((r) => r.kind === 'DestinationRule' && r.apiVersion.startsWith('networking.istio.io/'))
    .sort((a, b) => {
      const ka = `${a.metadata.namespace ?? ''}/${a.metadata.name}`;
      const kb = `${b.metadata.namespace ?? ''}/${b.metadata.name}`;
      return ka < kb ? -1 : ka > kb ? 1 : 0;
    });
  const out = new Map<string, HostRule>();
  for (const r of rules) {
    const spec = isRecord(r.spec) ? r.spec : {};
    if (typeof spec['host'] !== 'string') continue;
    const host = resolveHost(spec['host'], r.metadata.namespace ?? 'default', clusterDomain);
    if (out.has(host)) continue;
    const subsets = (Array.isArray(spec['subsets']) ? spec['subsets'].filter(isRecord) : []).flatMap((s): Subset[] =>
      typeof s['name'] === 'string'
        ? [
            {
              name: s['name'],
              labels: isRecord(s['labels']) ? (s['labels'] as Record<string, string>) : {},
              trafficPolicy: isRecord(s['trafficPolicy']) ? s['trafficPolicy'] : undefined,
            },
          ]
        : [],
    );
    out.set(host, {
      resource: r,
      trafficPolicy: isRecord(spec['trafficPolicy']) ? spec['trafficPolicy'] : undefined,
      subsets,
    });
  }
  return out;
}

/**
 * The policy in force for one port (and subset), as istiod merges it: a matching
 * portLevelSettings entry replaces the top-level fields it sets, then the subset's
 * policy (with its own port level) replaces the fields it sets.
 */
export function effectivePolicy(rule: HostRule | undefined, port: number, subset: Subset | undefined): Policy {
  const merged: Policy = {};
  for (const policy of [rule?.trafficPolicy, subset?.trafficPolicy]) {
    if (policy === undefined) continue;
    for (const [k, v] of Object.entries(policy)) if (k !== 'portLevelSettings') merged[k] = v;
    const levels = Array.isArray(policy['portLevelSettings']) ? policy['portLevelSettings'].filter(isRecord) : [];
    const level = levels.find((l) => isRecord(l['port']) && l['port']['number'] === port);
    if (level) for (const [k, v] of Object.entries(level)) if (k !== 'port') merged[k] = v;
  }
  return merged;
}
