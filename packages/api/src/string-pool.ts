/**
 * Strings this long or shorter are shared; longer ones rarely repeat, and hashing them for a
 * lookup would cost more than it saves.
 */
const MAX_SHARED_LENGTH = 64;

/**
 * One instance of each short string value, for the objects of one parsed text. JSON.parse gives
 * every value its own string: a pod's IP is held three times (the pod's podIP, its podIPs entry
 * and the EndpointSlice address) and each node name many thousands of times, a large share of the
 * server's heap (see docs/design/decisions/README.md#string-pool). Property names need no pool: V8
 * internalizes them.
 * A pool lives as long as the walk that uses it, so it keeps nothing alive by itself.
 */
export class StringPool {
  readonly #strings = new Map<string, string>();

  share(value: string): string {
    if (value.length > MAX_SHARED_LENGTH) return value;
    const kept = this.#strings.get(value);
    if (kept !== undefined) return kept;
    this.#strings.set(value, value);
    return value;
  }
}

/**
 * deepFreeze for a value parsed from JSON (plain objects, arrays, strings, numbers, booleans,
 * null) that also makes its short string values the pool's instances, in the same walk. Members
 * are assigned before their object is frozen; assigning an existing key keeps the key order, so
 * the value's JSON encoding is unchanged. A frozen object is left as it is (it may be shared).
 */
export function deepFreezeSharingStrings<T>(value: T, pool: StringPool): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const member: unknown = value[i];
      if (typeof member === 'string') value[i] = pool.share(member);
      else deepFreezeSharingStrings(member, pool);
    }
  } else {
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const member = record[key];
      if (typeof member === 'string') record[key] = pool.share(member);
      else deepFreezeSharingStrings(member, pool);
    }
  }
  return Object.freeze(value);
}
