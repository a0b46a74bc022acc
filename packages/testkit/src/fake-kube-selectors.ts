// Label and field selectors as kube-apiserver parses them from `?labelSelector=` and
// `?fieldSelector=` (the subset the fake API server supports). A parse error is reported as
// a 400 BadRequest by the caller.

/** A predicate over a stored object. */
export type FakeKubeObjectFilter = (obj: FakeKubeObject) => boolean;

/** The shape the fake server stores: any JSON object with Kubernetes metadata. */
export interface FakeKubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: FakeKubeMetadata;
  [field: string]: unknown;
}

export interface FakeKubeMetadata {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: Array<{ uid?: string; name?: string; kind?: string; apiVersion?: string }>;
  managedFields?: Array<Record<string, unknown>>;
  [field: string]: unknown;
}

/** Thrown for a selector the fake server cannot parse. */
export class FakeKubeSelectorError extends Error {}

/** Splits on commas that are not inside parentheses (`a in (x,y),b`). */
function splitRequirements(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of selector) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current.trim());
      current = '';
    } else {
      current += ch;
    }
  }
  if (current.trim() !== '') parts.push(current.trim());
  return parts.filter((p) => p !== '');
}

const SET_REQUIREMENT = /^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$/;
const EQUALITY_REQUIREMENT = /^([\w./-]+)\s*(==|=|!=)\s*([\w./-]*)$/;
const EXISTS_REQUIREMENT = /^(!?)([\w./-]+)$/;

function parseLabelRequirement(req: string): (labels: Record<string, string>) => boolean {
  const set = SET_REQUIREMENT.exec(req);
  if (set) {
    const [, key, op, list] = set as unknown as [string, string, string, string];
    const values = new Set(list.split(',').map((v) => v.trim()));
    return op === 'in'
      ? (labels) => key in labels && values.has(labels[key]!)
      : (labels) => !(key in labels) || !values.has(labels[key]!);
  }
  const eq = EQUALITY_REQUIREMENT.exec(req);
  if (eq) {
    const [, key, op, value] = eq as unknown as [string, string, string, string];
    return op === '!=' ? (labels) => labels[key] !== value : (labels) => labels[key] === value;
  }
  const exists = EXISTS_REQUIREMENT.exec(req);
  if (exists) {
    const [, not, key] = exists as unknown as [string, string, string];
    return not === '!' ? (labels) => !(key in labels) : (labels) => key in labels;
  }
  throw new FakeKubeSelectorError(`unable to parse requirement: "${req}"`);
}

/** Parses a label selector (`=`, `==`, `!=`, `in`, `notin`, `key`, `!key`); '' selects everything. */
export function parseLabelSelector(selector: string | null): FakeKubeObjectFilter {
  if (selector === null || selector.trim() === '') return () => true;
  const requirements = splitRequirements(selector).map(parseLabelRequirement);
  return (obj) => {
    const labels = obj.metadata.labels ?? {};
    return requirements.every((r) => r(labels));
  };
}

const FIELD_REQUIREMENT = /^([\w.]+)\s*(==|=|!=)\s*(.*)$/;

function fieldValue(obj: FakeKubeObject, path: string): string | undefined {
  let current: unknown = obj;
  for (const part of path.split('.')) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current === undefined ? undefined : String(current);
}

/**
 * Parses a field selector. kube-apiserver supports `metadata.name` and `metadata.namespace` for
 * every type (plus a few per-type fields); the fake supports those two and rejects the rest.
 */
export function parseFieldSelector(selector: string | null): FakeKubeObjectFilter {
  if (selector === null || selector.trim() === '') return () => true;
  const requirements = splitRequirements(selector).map((req) => {
    const m = FIELD_REQUIREMENT.exec(req);
    if (!m) throw new FakeKubeSelectorError(`invalid field selector: "${req}"`);
    const [, field, op, value] = m as unknown as [string, string, string, string];
    if (field !== 'metadata.name' && field !== 'metadata.namespace') {
      throw new FakeKubeSelectorError(`field label not supported: ${field}`);
    }
    return (obj: FakeKubeObject) => (op === '!=') !== (fieldValue(obj, field) === value);
  });
  return (obj) => requirements.every((r) => r(obj));
}
