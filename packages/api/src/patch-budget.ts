import { MeshrelayError } from './errors.ts';
import { MAX_RESOURCE_DEPTH } from './wire.ts';

/**
 * What the RFC 6902 patches of one delta may cost a receiver. Each is checked before the
 * operation that would pass it is done, so a few bytes of operations cannot make a receiver
 * build a value, or spend time, far beyond what the delta's size suggests.
 */
export interface PatchLimits {
  /** Operations in all of a delta's patches. */
  readonly maxOpsPerDelta: number;
  /** Operations in the patches of one resource. */
  readonly maxOpsPerResource: number;
  /**
   * Items a delta's operations may touch: every container an operation walks or copies, every
   * array item an insertion or removal shifts, every value it measures or compares.
   */
  readonly maxWork: number;
  /** Deepest nesting of a patched resource, as for a full snapshot's resources (the resource is level 1). */
  readonly maxDepth: number;
}

/**
 * A sender keeps a delta's patches within MAX_HEADER_PATCH_BYTES (64 KiB); the shortest
 * operation is ~30 bytes, so no honest delta holds more than ~2,200 operations. One changed
 * endpoint of a ServiceEntry is 1–2 operations; a diff of a 500-endpoint one a few hundred,
 * each touching up to 500 items when it shifts the array — well under a million items.
 */
export const DEFAULT_PATCH_LIMITS: PatchLimits = Object.freeze({
  maxOpsPerDelta: 4096,
  maxOpsPerResource: 2048,
  maxWork: 4_000_000,
  maxDepth: MAX_RESOURCE_DEPTH,
});

/**
 * `limits` with every field it lacks taken from DEFAULT_PATCH_LIMITS; refuses a field that is not a positive integer.
 */
export function patchLimits(limits: Partial<PatchLimits> = {}): PatchLimits {
  const merged = { ...DEFAULT_PATCH_LIMITS, ...limits };
  for (const [name, value] of Object.entries(merged)) {
    if (!Number.isSafeInteger(value) || value < 1)
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_CONFIG',
        `patch limit ${name} must be a positive integer, got ${String(value)}`,
      );
  }
  return merged;
}

/**
 * The running account of one delta's patches against its limits: operations (per delta and per
 * resource), work, and how far the snapshot may grow before it passes the snapshot byte limit.
 * Every refusal is MESHRELAY_ERR_DELTA_LIMIT naming the limit and the resource.
 */
export class PatchBudget {
  readonly limits: PatchLimits;
  /** The snapshot byte limit; no resource may pass it either. */
  readonly maxBytes: number;
  #ops = 0;
  #work = 0;
  #growthLeft: number;
  readonly #opsByKey = new Map<string, number>();

  /** `baseBytes`, when known, is the base snapshot's canonical size: the growth allowed is what the limit leaves. */
  constructor(limits: PatchLimits, maxBytes: number, baseBytes?: number) {
    this.limits = limits;
    this.maxBytes = maxBytes;
    this.#growthLeft = maxBytes - (baseBytes ?? 0);
  }

  /** Counts a patch's `count` operations on `key` before any is done. */
  countOps(key: string, count: number): void {
    const forKey = (this.#opsByKey.get(key) ?? 0) + count;
    this.#opsByKey.set(key, forKey);
    this.#ops += count;
    if (forKey > this.limits.maxOpsPerResource) {
      throw limitError(
        key,
        `${forKey} operations; the limit is ${this.limits.maxOpsPerResource} patch operations per resource`,
      );
    }
    if (this.#ops > this.limits.maxOpsPerDelta)
      throw limitError(
        key,
        `the delta's patches hold ${this.#ops} operations; the limit is ${this.limits.maxOpsPerDelta} patch operations per delta`,
      );
  }

  /** Charges `units` of work, refusing once the delta's work would pass its limit. */
  charge(key: string, units: number): void {
    this.#work += units;
    if (this.#work > this.limits.maxWork)
      throw limitError(
        key,
        `the delta's patches would touch more than ${this.limits.maxWork} items (array shifts, copies, walks); that is the patch work limit per delta`,
      );
  }

  /** Work still allowed (a measurement stops once past it). */
  get workLeft(): number {
    return this.limits.maxWork - this.#work;
  }

  /**
   * Takes the change of a resource's size into the snapshot's; refuses a resource (whose size is
   * given when known) or the snapshot past the byte limit.
   */
  grow(key: string, resourceBytes: number | undefined, change: number): void {
    if (resourceBytes !== undefined && resourceBytes > this.maxBytes)
      throw limitError(key, `the resource would be over ${this.maxBytes} bytes, the snapshot byte limit`);
    this.#growthLeft -= change;
    if (this.#growthLeft < 0)
      throw limitError(key, `the snapshot would be over ${this.maxBytes} bytes, the snapshot byte limit`);
  }

  /** Bytes the snapshot may still grow by. */
  get growthLeft(): number {
    return this.#growthLeft;
  }

  /** Refuses a value found, while it was measured, too large for the room left. */
  refuseSize(key: string, path: string): never {
    throw limitError(
      key,
      `the value at ${JSON.stringify(path)} would take the resource or the snapshot over ${this.maxBytes} bytes, the snapshot byte limit`,
    );
  }

  /** Refuses a value whose deepest nesting, placed where it goes, is past the depth limit. */
  checkDepth(key: string, depth: number, path: string): void {
    if (depth > this.limits.maxDepth)
      throw limitError(
        key,
        `the value at ${JSON.stringify(path)} would be nested deeper than ${this.limits.maxDepth} levels, the resource depth limit`,
      );
  }
}

export function limitError(key: string, reason: string): MeshrelayError {
  return new MeshrelayError('MESHRELAY_ERR_DELTA_LIMIT', `patch of ${key} refused: ${reason}`);
}
