import {
  KINDS,
  canonicalJson,
  findInputKind,
  isKind,
  isMeshConfigMap,
  isRecord,
  normalizeResource,
  type Resource,
} from '@meshrelay/api';

/** Checks one normalized resource; returns its field problems (empty when valid). */
export type ResourceValidator = (resource: Resource) => readonly { readonly path: string; readonly message: string }[];

/** A problem of one object, at a dotted field path inside it ('' = the object itself). */
export interface FieldProblem {
  readonly path: string;
  readonly message: string;
}

/**
 * What one discovered object becomes: a resource ready for a snapshot with its
 * canonical encoding (what the snapshot's encoding and hash are assembled
 * from), or why it cannot be one.
 */
export type InputConversion =
  { readonly resource: Resource; readonly encoding: string } | { readonly problems: readonly FieldProblem[] };

/**
 * Deepest nesting of objects and arrays accepted in one object. Kubernetes
 * objects stay far below it; deeper values would overflow the recursive
 * encoders and validators on this and the server's side.
 */
export const MAX_OBJECT_DEPTH = 64;

/** A Gloo API group (`*.solo.io`): such a resource gets a status from the plane, whatever its kind. */
const GLOO_API_VERSION = /^[a-z0-9.-]+\.solo\.io\/[a-z0-9]+$/;

/**
 * Whether a resource that failed `validate` still goes up: a Gloo resource whose only
 * problems are its kind or its spec. The plane then reports it INVALID with the fields named
 * (where its owners look), and a broken AccessPolicy fails closed instead of vanishing.
 */
function carriedDespite(resource: Resource, problems: readonly FieldProblem[]): boolean {
  return (
    GLOO_API_VERSION.test(resource.apiVersion) &&
    problems.every((p) => p.path === 'kind' || p.path === 'spec' || /^spec[.[]/.test(p.path))
  );
}

/**
 * Turns one discovered object (a manifest document or an API server object) into
 * an input resource: shape check (enough for normalizeResource to be safe), the
 * namespace default, normalizeResource, canonical-encodability and `validate`.
 * A Kubernetes object that is not an input (a Namespace, a ConfigMap other than Istio's mesh config) is skipped
 * quietly: no resource and no problem. A Gloo resource whose kind or spec is invalid is
 * still returned (see carriedDespite).
 * Every discovery provider goes through this one function, so the same object
 * gives the same resource, and the same objects the same snapshot hash, whichever
 * provider found them. `pathPrefix` is prepended to every problem path (e.g.
 * `items[3].` for a List item). Never throws.
 */
export function toInputResource(value: unknown, validate: ResourceValidator, pathPrefix = ''): InputConversion {
  if (nestingExceeds(value, MAX_OBJECT_DEPTH))
    return {
      problems: [
        {
          path: pathPrefix.replace(/\.$/, ''),
          message: `nests objects and arrays deeper than ${MAX_OBJECT_DEPTH} levels`,
        },
      ],
    };
  const shape = checkShape(value);
  if (shape.length > 0) return { problems: shape.map((p) => ({ path: pathPrefix + p.path, message: p.message })) };
  const raw = value as Resource;
  const kindRef = findInputKind(raw.apiVersion, raw.kind);
  if (!kindRef && !GLOO_API_VERSION.test(raw.apiVersion)) return { problems: [] };
  if (isKind(raw, KINDS.ConfigMap) && !isMeshConfigMap(raw)) return { problems: [] };
  // As `kubectl apply` does, a namespaced object without a namespace lands in "default".
  const withNamespace =
    kindRef?.namespaced === true && (raw.metadata.namespace ?? '') === ''
      ? { ...raw, metadata: { ...raw.metadata, namespace: 'default' } }
      : raw;
  let resource: Resource;
  let encoding: string;
  try {
    resource = normalizeResource(withNamespace);
    encoding = canonicalJson(resource);
  } catch (err) {
    return { problems: [{ path: pathPrefix.replace(/\.$/, ''), message: (err as Error).message }] };
  }
  const problems = validate(resource);
  if (problems.length > 0 && !carriedDespite(resource, problems))
    return { problems: problems.map((p) => ({ path: pathPrefix + p.path, message: p.message })) };
  return { resource, encoding };
}

/** Whether `value` nests objects/arrays deeper than `limit` (iterative, so any depth is safe to check). */
function nestingExceeds(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop() as [unknown, number];
    if (item === null || typeof item !== 'object') continue;
    if (depth > limit) return true;
    for (const member of Object.values(item))
      if (member !== null && typeof member === 'object') stack.push([member, depth + 1]);
  }
  return false;
}

function checkShape(value: unknown): FieldProblem[] {
  if (!isRecord(value))
    return [{ path: '', message: 'a document must be an object with apiVersion, kind and metadata' }];
  const problems: FieldProblem[] = [];
  for (const key of ['apiVersion', 'kind'] as const) {
    if (typeof value[key] !== 'string' || value[key] === '')
      problems.push({ path: key, message: 'is required and must be a non-empty string' });
  }
  const meta = value['metadata'];
  if (!isRecord(meta)) return [...problems, { path: 'metadata', message: 'is required and must be an object' }];
  if (typeof meta['name'] !== 'string' || meta['name'] === '')
    problems.push({ path: 'metadata.name', message: 'is required and must be a non-empty string' });
  if (meta['namespace'] !== undefined && typeof meta['namespace'] !== 'string')
    problems.push({ path: 'metadata.namespace', message: 'must be a string' });
  for (const key of ['labels', 'annotations'] as const) {
    const map = meta[key];
    if (map === undefined || map === null) continue;
    if (!isRecord(map)) problems.push({ path: `metadata.${key}`, message: 'must be a map of strings' });
    else
      for (const [k, v] of Object.entries(map))
        if (typeof v !== 'string') problems.push({ path: `metadata.${key}.${k}`, message: 'must be a string' });
  }
  return problems;
}
