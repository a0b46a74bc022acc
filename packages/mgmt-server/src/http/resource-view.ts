import { KINDS, MeshrelayError, defaultPluralOf } from '@meshrelay/api';
import type { ResourceView } from '@meshrelay/registry';
import type { Approval, ResourceStatus } from '@meshrelay/translator';

export const APPROVALS: readonly Approval[] = ['ACCEPTED', 'WARNING', 'INVALID', 'FAILED'];

/** The filters of GET /api/v1/resources; every one is optional and they combine with AND. */
export interface ResourceFilter {
  readonly kind?: string;
  readonly cluster?: string;
  readonly approval?: Approval;
  readonly name?: string;
  readonly namespace?: string;
}

const FILTER_KEYS = ['kind', 'cluster', 'approval', 'name', 'namespace'] as const;

/** Whether `query` names `kind`: the kind name or its plural, in any case. */
export function kindMatches(kind: string, query: string): boolean {
  const q = query.toLowerCase();
  return q === kind.toLowerCase() || q === defaultPluralOf(kind);
}

/** The Gloo kinds a `kind` filter may name: every Gloo kind, plus any kind a status carries. */
function knownGlooKinds(statuses: readonly ResourceStatus[]): string[] {
  const kinds = new Set(
    Object.values(KINDS)
      .filter((k) => k.apiVersion.includes('.solo.io/'))
      .map((k) => k.kind),
  );
  for (const s of statuses) kinds.add(s.kind);
  return [...kinds].sort();
}

/**
 * Checks the query string of GET /api/v1/resources; throws MESHRELAY_ERR_INVALID_ARGUMENT naming an
 * unknown parameter, a repeated one, an approval that is not one of Gloo's states, or a kind that is
 * not a Gloo kind. The kind in the answer is the canonical kind name.
 */
export function parseResourceFilter(
  query: Readonly<Record<string, unknown>>,
  statuses: readonly ResourceStatus[],
): ResourceFilter {
  const filter: Record<string, string> = {};
  for (const [key, value] of Object.entries(query)) {
    if (!(FILTER_KEYS as readonly string[]).includes(key)) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_ARGUMENT',
        `unknown query parameter "${key}" (expected ${FILTER_KEYS.join(', ')})`,
      );
    }
    if (typeof value !== 'string')
      throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', `query parameter "${key}" must be given once`);
    filter[key] = value;
  }
  const approval = filter['approval'];
  if (approval !== undefined && !(APPROVALS as readonly string[]).includes(approval.toUpperCase())) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `approval "${approval}" is not one of ${APPROVALS.join(', ')}`,
    );
  }
  const kindQuery = filter['kind'];
  let kind: string | undefined;
  if (kindQuery !== undefined) {
    const known = knownGlooKinds(statuses);
    kind = known.find((k) => kindMatches(k, kindQuery));
    if (kind === undefined) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_ARGUMENT',
        `kind "${kindQuery}" is not a Gloo kind (known: ${known.join(', ')})`,
      );
    }
  }
  return {
    ...(kind !== undefined ? { kind } : {}),
    ...(approval !== undefined ? { approval: approval.toUpperCase() as Approval } : {}),
    ...(filter['cluster'] !== undefined ? { cluster: filter['cluster'] } : {}),
    ...(filter['name'] !== undefined ? { name: filter['name'] } : {}),
    ...(filter['namespace'] !== undefined ? { namespace: filter['namespace'] } : {}),
  };
}

/** The statuses that pass every filter, as wire views, in the translator's order (by source id). */
export function listResources(statuses: readonly ResourceStatus[], filter: ResourceFilter): ResourceView[] {
  return statuses
    .filter(
      (s) =>
        (filter.kind === undefined || s.kind === filter.kind) &&
        (filter.cluster === undefined || s.cluster === filter.cluster) &&
        (filter.approval === undefined || s.state.approval === filter.approval) &&
        (filter.name === undefined || s.name === filter.name) &&
        (filter.namespace === undefined || s.namespace === filter.namespace),
    )
    .map(toResourceView);
}

export function toResourceView(s: ResourceStatus): ResourceView {
  return {
    kind: s.kind,
    apiVersion: s.apiVersion,
    namespace: s.namespace,
    name: s.name,
    cluster: s.cluster,
    approval: s.state.approval,
    observedGeneration: s.state.observedGeneration,
    message: s.state.message,
    source: s.source,
    clusters: s.clusters,
    outputs: s.outputs,
  };
}
