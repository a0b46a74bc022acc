/** A Kubernetes-shaped object as carried in snapshots. Bodies are plain JSON. */
export interface ObjectMeta {
  readonly name: string;
  readonly namespace?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  /**
   * Reported as a status's observedGeneration when an input carries it. Discovery providers
   * drop it (equal content must hash equally whichever provider found it), so an agent fills
   * the observed generation from the live object when it writes a status.
   */
  readonly generation?: number;
}

export interface Resource {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: ObjectMeta;
  readonly spec?: unknown;
  readonly status?: unknown;
  readonly [field: string]: unknown;
}

/** The identity of a resource inside one snapshot. */
export interface ResourceKey {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

export function resourceKey(r: Resource): ResourceKey {
  return { apiVersion: r.apiVersion, kind: r.kind, namespace: r.metadata.namespace ?? '', name: r.metadata.name };
}

/** "kind apiVersion namespace/name" — stable, human-readable, used in logs and error messages. */
export function formatResourceKey(key: ResourceKey): string {
  const where = key.namespace === '' ? key.name : `${key.namespace}/${key.name}`;
  return `${key.kind}.${key.apiVersion} ${where}`;
}

/** One string per resource identity; what an agent reports for the output it holds. */
export function resourceId(r: Resource): string {
  return formatResourceKey(resourceKey(r));
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Total order used by every snapshot: (apiVersion, kind, namespace, name). */
export function compareResources(a: Resource, b: Resource): number {
  const ka = resourceKey(a);
  const kb = resourceKey(b);
  return (
    compareStrings(ka.apiVersion, kb.apiVersion) ||
    compareStrings(ka.kind, kb.kind) ||
    compareStrings(ka.namespace, kb.namespace) ||
    compareStrings(ka.name, kb.name)
  );
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
