import { isRecord, type Resource } from './resource.ts';

/**
 * Projects a discovered object onto the fields Meshrelay reads, dropping what
 * changes without meaning (resourceVersion, uid, managedFields, pod conditions,
 * ...). Every discovery provider calls this, so the same objects give the same
 * input snapshot hash whichever provider found them.
 */
const VOLATILE_ANNOTATIONS = ['kubectl.kubernetes.io/last-applied-configuration'];
const TOPOLOGY_LABELS = ['topology.kubernetes.io/region', 'topology.kubernetes.io/zone', 'topology.istio.io/subzone'];

export function normalizeResource(input: Resource): Resource {
  const meta = input.metadata;
  const metadata: Record<string, unknown> = { name: meta.name };
  if (meta.namespace !== undefined && meta.namespace !== '') metadata['namespace'] = meta.namespace;
  if (meta.labels && Object.keys(meta.labels).length > 0) metadata['labels'] = { ...meta.labels };
  const annotations = Object.entries(meta.annotations ?? {}).filter(([k]) => !VOLATILE_ANNOTATIONS.includes(k));
  if (annotations.length > 0) metadata['annotations'] = Object.fromEntries(annotations);
  const base = { apiVersion: input.apiVersion, kind: input.kind, metadata } as Record<string, unknown>;

  if (input.apiVersion === 'v1' && input.kind === 'Pod') {
    const spec = isRecord(input.spec) ? input.spec : {};
    const status = isRecord(input.status) ? input.status : {};
    base['spec'] = pick(spec, ['serviceAccountName', 'nodeName']);
    base['status'] = pick(status, ['phase', 'podIP', 'podIPs']);
    return base as unknown as Resource;
  }
  if (input.apiVersion === 'v1' && input.kind === 'Node') {
    const labels = Object.entries(meta.labels ?? {}).filter(([k]) => TOPOLOGY_LABELS.includes(k));
    metadata['labels'] = Object.fromEntries(labels);
    delete metadata['annotations'];
    return base as unknown as Resource;
  }
  if (input.apiVersion === 'v1' && input.kind === 'Service') {
    const spec = isRecord(input.spec) ? { ...input.spec } : {};
    delete spec['clusterIPs'];
    base['spec'] = spec;
    const lb =
      isRecord(input.status) && isRecord(input.status['loadBalancer']) ? input.status['loadBalancer'] : undefined;
    if (lb && Array.isArray(lb['ingress']) && lb['ingress'].length > 0)
      base['status'] = { loadBalancer: { ingress: lb['ingress'] } };
    return base as unknown as Resource;
  }
  // Everything else: all top-level fields except status and the volatile metadata dropped above.
  for (const [key, value] of Object.entries(input)) {
    if (key !== 'apiVersion' && key !== 'kind' && key !== 'metadata' && key !== 'status') base[key] = value;
  }
  return base as unknown as Resource;
}

function pick(source: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) if (source[key] !== undefined) out[key] = source[key];
  return out;
}
