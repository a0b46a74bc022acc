import jsonpatch, { type Operation } from 'fast-json-patch';
import { canonicalJson } from './canonical.ts';
import { MeshrelayError } from './errors.ts';
import { isRecord, resourceId, type Resource } from './resource.ts';

const { applyPatch } = jsonpatch;

/** One resource of a delta's base changed in place: its key and its RFC 6902 operations as JSON text. */
export interface ResourcePatch {
  readonly key: string;
  readonly ops: string;
}

/**
 * The RFC 6902 patch that turns `base` into `next` as JSON text, or undefined when it is not
 * shorter than `nextEncoding` (the canonical encoding of `next`, which would travel instead).
 */
export function resourcePatch(base: Resource, next: Resource, nextEncoding: string): ResourcePatch | undefined {
  const ops = resourcePatchOps(base, next);
  const key = resourceId(next);
  return Buffer.byteLength(ops) + Buffer.byteLength(key) < Buffer.byteLength(nextEncoding) ? { key, ops } : undefined;
}

/**
 * The RFC 6902 operations (JSON text) that turn the JSON value `base` into `next`. Objects are
 * compared member by member; arrays keep their common head and tail and compare the items
 * between by index, removing or adding the surplus: an endpoint of a ServiceEntry that changes,
 * goes or comes costs that endpoint, not the ~500 after it (fast-json-patch's `compare` would
 * replace every item after a removed one).
 */
export function resourcePatchOps(base: unknown, next: unknown): string {
  const ops: Operation[] = [];
  diff(base, next, '', ops);
  return JSON.stringify(ops);
}

function diff(a: unknown, b: unknown, path: string, ops: Operation[]): void {
  if (a === b) return;
  if (Array.isArray(a) && Array.isArray(b)) diffArrays(a, b, path, ops);
  else if (isRecord(a) && isRecord(b) && !Array.isArray(a) && !Array.isArray(b)) diffObjects(a, b, path, ops);
  else if (!same(a, b)) ops.push({ op: 'replace', path, value: b });
}

function diffObjects(a: Record<string, unknown>, b: Record<string, unknown>, path: string, ops: Operation[]): void {
  for (const key of Object.keys(a)) {
    if (a[key] !== undefined && b[key] === undefined) ops.push({ op: 'remove', path: `${path}/${pointerToken(key)}` });
  }
  for (const key of Object.keys(b)) {
    const value = b[key];
    if (value === undefined) continue;
    if (a[key] === undefined) ops.push({ op: 'add', path: `${path}/${pointerToken(key)}`, value });
    else diff(a[key], value, `${path}/${pointerToken(key)}`, ops);
  }
}

function diffArrays(a: readonly unknown[], b: readonly unknown[], path: string, ops: Operation[]): void {
  let head = 0;
  while (head < a.length && head < b.length && same(a[head], b[head])) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && same(a[a.length - 1 - tail], b[b.length - 1 - tail])) tail++;
  const fromA = a.length - head - tail;
  const fromB = b.length - head - tail;
  const common = Math.min(fromA, fromB);
  for (let i = 0; i < common; i++) diff(a[head + i], b[head + i], `${path}/${head + i}`, ops);
  // Surplus items of `a` go last first, so each index still names the item meant.
  for (let i = fromA - 1; i >= common; i--) ops.push({ op: 'remove', path: `${path}/${head + i}` });
  for (let i = common; i < fromB; i++) ops.push({ op: 'add', path: `${path}/${head + i}`, value: b[head + i] });
}

/** Equal JSON values: the same object (snapshots share unchanged parts) or the same canonical encoding. */
function same(a: unknown, b: unknown): boolean {
  return a === b || canonicalJson(a) === canonicalJson(b);
}

/** RFC 6901: "~" and "/" in a member name are escaped. */
function pointerToken(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

/**
 * `base` with `patch` applied, as a new object (`base`, frozen or not, is left as it is).
 * Refused with MESHRELAY_ERR_DELTA_BASE_MISMATCH when the operations are not a JSON array,
 * do not apply (a path the base lacks, a failed `test`, a prototype member), or give something
 * that is not a resource with the patch's key: each means the sender's base is not this one.
 */
export function applyResourcePatch(base: Resource, patch: ResourcePatch): Resource {
  let ops: unknown;
  try {
    ops = JSON.parse(patch.ops);
  } catch (err) {
    throw mismatch(patch.key, 'its operations are not JSON', err);
  }
  if (!Array.isArray(ops)) throw mismatch(patch.key, 'its operations are not a JSON array');
  let result: unknown;
  try {
    // Validated op by op; applied to a copy; "__proto__"/"constructor" members refused.
    result = applyPatch(base, ops as Operation[], true, false, true).newDocument;
  } catch (err) {
    throw mismatch(patch.key, (err as Error).message.split('\n')[0] ?? 'it does not apply', err);
  }
  if (!isRecord(result) || typeof result['apiVersion'] !== 'string' || typeof result['kind'] !== 'string' || !isRecord(result['metadata'])) {
    throw mismatch(patch.key, 'the result is not a resource (needs apiVersion, kind, metadata)');
  }
  const id = resourceId(result as unknown as Resource);
  if (id !== patch.key) throw mismatch(patch.key, `the result is ${id}`);
  return result as unknown as Resource;
}

function mismatch(key: string, reason: string, cause?: unknown): MeshrelayError {
  return new MeshrelayError('MESHRELAY_ERR_DELTA_BASE_MISMATCH', `patch of ${key} does not apply to the base: ${reason}`, cause === undefined ? undefined : { cause });
}
