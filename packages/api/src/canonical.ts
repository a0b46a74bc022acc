import { MeshrelayError } from './errors.ts';

/**
 * Canonical JSON: object keys sorted by UTF-16 code unit, no whitespace,
 * `undefined` members dropped. Equal values give equal strings on every machine,
 * which is what snapshot hashes rest on.
 *
 * Throws MESHRELAY_ERR_INVALID_RESOURCE for values JSON cannot carry faithfully
 * (non-finite numbers, bigint, functions, symbols, cycles).
 */
export function canonicalJson(value: unknown): string {
  return encode(value, new Set());
}

function encode(value: unknown, seen: Set<object>): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw invalid(`non-finite number ${String(value)}`);
      return JSON.stringify(value);
    case 'object':
      break;
    default:
      throw invalid(`a ${typeof value} cannot be encoded`);
  }
  const obj = value as object;
  if (seen.has(obj)) throw invalid('cyclic value');
  seen.add(obj);
  let out: string;
  if (Array.isArray(obj)) {
    out = `[${obj.map((item: unknown) => (item === undefined ? 'null' : encode(item, seen))).join(',')}]`;
  } else {
    const record = obj as Record<string, unknown>;
    const parts: string[] = [];
    for (const key of Object.keys(record).sort()) {
      const member = record[key];
      if (member === undefined) continue;
      parts.push(`${JSON.stringify(key)}:${encode(member, seen)}`);
    }
    out = `{${parts.join(',')}}`;
  }
  seen.delete(obj);
  return out;
}

function invalid(reason: string): MeshrelayError {
  return new MeshrelayError('MESHRELAY_ERR_INVALID_RESOURCE', `value cannot be canonically encoded: ${reason}`);
}

/** Recursively freezes a plain JSON value so a snapshot cannot be mutated after it is built. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value as object)) deepFreeze(member);
  }
  return value;
}
