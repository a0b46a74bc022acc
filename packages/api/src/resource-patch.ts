import jsonpatch, { type Operation } from 'fast-json-patch';
import { MeshrelayError } from './errors.ts';
import { isRecord, resourceId, type Resource } from './resource.ts';

const { applyPatch, compare } = jsonpatch;

/** One resource of a delta's base changed in place: its key and its RFC 6902 operations as JSON text. */
export interface ResourcePatch {
  readonly key: string;
  readonly ops: string;
}

/**
 * The RFC 6902 patch that turns `base` into `next` as JSON text, or undefined when it is not
 * shorter than `nextEncoding` (the canonical encoding of `next`, which would travel instead).
 * Arrays are compared by index, so a changed item is one `replace` at its path: the common
 * case (an endpoint of a ServiceEntry changes) costs the item, not the resource.
 */
export function resourcePatch(base: Resource, next: Resource, nextEncoding: string): ResourcePatch | undefined {
  const ops = JSON.stringify(compare(base, next));
  const key = resourceId(next);
  return Buffer.byteLength(ops) + Buffer.byteLength(key) < Buffer.byteLength(nextEncoding) ? { key, ops } : undefined;
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
