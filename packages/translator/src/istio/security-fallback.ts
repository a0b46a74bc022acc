/**
 * Fail closed. An AccessPolicy that cannot be translated keeps its last good outputs; one that
 * never had any gets an allow-nothing AuthorizationPolicy on every workload group it selects
 * (with Istio's deny-by-default this admits no request), never nothing.
 */
import { KINDS, isRecord, type Resource } from '@meshrelay/api';
import { policyTargets, type AccessContext } from './authorization-policy.ts';
import type { AccessPolicySpec } from '../gloo/gloo-types.ts';
import type { Owned } from '../gloo/inventory.ts';
import { accessPolicyOutputName, outputMetadata } from './names.ts';

const STRING_FIELDS = ['name', 'namespace', 'cluster', 'workspace'] as const;

/**
 * A selector read leniently from an unvalidated body: string fields and a string label map, or undefined when
 * unreadable.
 */
function looseSelector(value: unknown): Record<string, unknown> | undefined {
  if (value === undefined) return {};
  if (!isRecord(value)) return undefined;
  const out: Record<string, unknown> = {};
  for (const key of STRING_FIELDS) {
    const field = value[key];
    if (field === undefined) continue;
    if (typeof field !== 'string') return undefined;
    out[key] = field;
  }
  const labels = value['labels'];
  if (labels !== undefined) {
    if (!isRecord(labels) || Object.values(labels).some((v) => typeof v !== 'string')) return undefined;
    out['labels'] = labels;
  }
  return out;
}

function looseList(
  value: unknown,
  read: (item: Record<string, unknown>) => Record<string, unknown> | undefined,
): Record<string, unknown>[] | undefined {
  if (value === undefined) return [];
  if (!Array.isArray(value)) return undefined;
  const out: Record<string, unknown>[] = [];
  for (const item of value) {
    const parsed = isRecord(item) ? read(item) : undefined;
    if (!parsed) return undefined;
    out.push(parsed);
  }
  return out;
}

/** The selection part of an AccessPolicy body, or undefined when it cannot be read safely. */
function looseSelection(
  resource: Resource,
): Pick<AccessPolicySpec, 'applyToWorkloads' | 'applyToDestinations'> | undefined {
  const spec = isRecord(resource.spec) ? resource.spec : {};
  const workloads = looseList(spec['applyToWorkloads'], (w) => {
    const selector = looseSelector(w['selector']);
    return selector ? { selector } : undefined;
  });
  const destinations = looseList(spec['applyToDestinations'], (d) => {
    const selector = looseSelector(d['selector']);
    const kind = d['kind'] ?? 'SERVICE';
    return selector && (kind === 'SERVICE' || kind === 'VIRTUAL_DESTINATION') ? { selector, kind } : undefined;
  });
  if (!workloads || !destinations) return undefined;
  return { applyToWorkloads: workloads, applyToDestinations: destinations } as Pick<
    AccessPolicySpec,
    'applyToWorkloads' | 'applyToDestinations'
  >;
}

function allowNothing(name: string, namespace: string, matchLabels?: Readonly<Record<string, string>>): Resource {
  return {
    apiVersion: KINDS.AuthorizationPolicy.apiVersion,
    kind: KINDS.AuthorizationPolicy.kind,
    metadata: outputMetadata(name, namespace),
    spec: matchLabels ? { selector: { matchLabels: { ...matchLabels } } } : {},
  };
}

/**
 * Allow-nothing AuthorizationPolicies for `resource` (an AccessPolicy found in `cluster`), with
 * the names its translation would have, so a later good translation replaces them in place.
 * When its selection cannot be read, the whole namespace of the AccessPolicy is closed.
 */
export function denyByDefault(
  resource: Resource,
  cluster: string,
  source: string,
  workspace: string,
  ctx: AccessContext,
): Resource[] {
  const namespace = resource.metadata.namespace ?? 'default';
  const owner = { name: resource.metadata.name, namespace };
  const selection = looseSelection(resource);
  if (!selection) return [allowNothing(accessPolicyOutputName(owner, namespace, 'deny'), namespace)];
  const policy: Owned<AccessPolicySpec> = {
    source,
    workspace,
    cluster,
    namespace,
    name: resource.metadata.name,
    labels: resource.metadata.labels ?? {},
    resource,
    spec: { ...selection, config: { authz: {} } },
  };
  return policyTargets(policy, ctx).map((t) =>
    allowNothing(accessPolicyOutputName(owner, t.namespace, t.suffix), t.namespace, t.matchLabels),
  );
}
