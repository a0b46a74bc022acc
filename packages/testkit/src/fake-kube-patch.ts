// Patch formats of the fake kube-apiserver: JSON merge patch (RFC 7386; strategic merge patch is
// treated the same way, which differs from the real server only for lists with merge keys such as
// containers), JSON patch (RFC 6902) and a simplified server-side apply (see applyConfiguration).

/** Thrown for a malformed or failing patch (the server answers 422 / 400). */
export class FakeKubePatchError extends Error {}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** RFC 7386: objects merge recursively, `null` deletes, everything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return structuredClone(patch);
  const result: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

function decodePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new FakeKubePatchError(`invalid JSON pointer "${pointer}"`);
  return pointer
    .slice(1)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function parentOf(doc: unknown, parts: string[], op: string): [Record<string, Json> | Json[], string] {
  let current: unknown = doc;
  for (const part of parts.slice(0, -1)) {
    current = Array.isArray(current) ? current[Number(part)] : (current as Record<string, unknown> | undefined)?.[part];
    if (current === null || typeof current !== 'object') {
      throw new FakeKubePatchError(`${op}: path segment "${part}" does not exist`);
    }
  }
  return [current as Record<string, Json> | Json[], parts[parts.length - 1] ?? ''];
}

function getAt(doc: unknown, pointer: string): Json {
  let current: unknown = doc;
  for (const part of decodePointer(pointer)) {
    current = Array.isArray(current) ? current[Number(part)] : (current as Record<string, unknown> | undefined)?.[part];
    if (current === undefined) throw new FakeKubePatchError(`path "${pointer}" does not exist`);
  }
  return structuredClone(current) as Json;
}

function removeAt(doc: unknown, pointer: string): void {
  const [parent, key] = parentOf(doc, decodePointer(pointer), 'remove');
  if (Array.isArray(parent)) {
    const index = Number(key);
    if (!(index >= 0 && index < parent.length)) throw new FakeKubePatchError(`remove: no index ${key}`);
    parent.splice(index, 1);
  } else {
    if (!(key in parent)) throw new FakeKubePatchError(`remove: "${pointer}" does not exist`);
    delete parent[key];
  }
}

function addAt(doc: unknown, pointer: string, value: Json, replace: boolean): void {
  const [parent, key] = parentOf(doc, decodePointer(pointer), replace ? 'replace' : 'add');
  if (Array.isArray(parent)) {
    const index = key === '-' ? parent.length : Number(key);
    if (!(index >= 0 && index <= parent.length)) throw new FakeKubePatchError(`no index ${key}`);
    parent.splice(index, replace ? 1 : 0, value);
  } else {
    if (replace && !(key in parent)) throw new FakeKubePatchError(`replace: "${pointer}" does not exist`);
    parent[key] = value;
  }
}

interface JsonPatchOperation {
  op: string;
  path: string;
  from?: string;
  value?: Json;
}

/** RFC 6902 on a copy of `target`; throws FakeKubePatchError on a failing operation or `test`. */
export function jsonPatch(target: unknown, operations: unknown): unknown {
  if (!Array.isArray(operations)) throw new FakeKubePatchError('a JSON patch must be an array of operations');
  const doc = { root: structuredClone(target) as Json };
  const at = (path: string): string => `/root${path}`;
  for (const operation of operations as JsonPatchOperation[]) {
    switch (operation.op) {
      case 'add':
        addAt(doc, at(operation.path), operation.value ?? null, false);
        break;
      case 'replace':
        addAt(doc, at(operation.path), operation.value ?? null, true);
        break;
      case 'remove':
        removeAt(doc, at(operation.path));
        break;
      case 'copy':
        addAt(doc, at(operation.path), getAt(doc, at(operation.from ?? '')), false);
        break;
      case 'move': {
        const value = getAt(doc, at(operation.from ?? ''));
        removeAt(doc, at(operation.from ?? ''));
        addAt(doc, at(operation.path), value, false);
        break;
      }
      case 'test':
        if (JSON.stringify(getAt(doc, at(operation.path))) !== JSON.stringify(operation.value)) {
          throw new FakeKubePatchError(`test of "${operation.path}" failed`);
        }
        break;
      default:
        throw new FakeKubePatchError(`unknown JSON patch operation "${operation.op}"`);
    }
  }
  return doc.root;
}

/**
 * A simplified server-side apply: `applied` is merged into `live` (maps recursively, lists and
 * scalars replace), and fields this manager applied last time but omits now are removed — the
 * part of field ownership that makes "apply a smaller object" shrink the live one. There is no
 * conflict detection between managers (a real server answers 409 without `force`).
 */
export function applyConfiguration(live: unknown, applied: unknown, previouslyApplied: unknown): unknown {
  if (!isPlainObject(applied)) return structuredClone(applied);
  const result: Record<string, unknown> = isPlainObject(live) ? { ...live } : {};
  const previous = isPlainObject(previouslyApplied) ? previouslyApplied : {};
  for (const key of Object.keys(previous)) {
    if (!(key in applied)) delete result[key];
  }
  for (const [key, value] of Object.entries(applied)) {
    result[key] = applyConfiguration(result[key], value, previous[key]);
  }
  return result;
}
