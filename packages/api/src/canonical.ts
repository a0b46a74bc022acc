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

/**
 * Encodings of deep-frozen canonical values that `canonicalCopy` built, by identity. Such a
 * value can never change, so its encoding is reused wherever it appears, also inside a new
 * object built around it (e.g. a resource with other metadata around the same frozen spec).
 */
const known = new WeakMap<object, string>();

/** Parts shorter than this are cheaper to encode again than to remember. */
const MIN_KEPT_PART = 256;

/**
 * Parts longer than this are not remembered by `canonicalCopy`: their text would be a second
 * (third, ...) copy of what the enclosing resource's encoding holds already, and a large part
 * is nearly always made of smaller remembered parts (e.g. the endpoints of a ServiceEntry), so
 * encoding it again is a join. `canonicalPart` remembers a part whatever its size.
 */
const MAX_KEPT_PART = 8 * 1024;

/** Objects and arrays `encode` built text for (their encoding was not known): lets tests see what was re-encoded. */
let objectEncodes = 0;

/** How many objects and arrays were canonically encoded without a known encoding in this process so far. */
export function canonicalObjectEncodeCount(): number {
  return objectEncodes;
}

/**
 * Remembers `encoding` as the canonical encoding of the deep-frozen canonical copy `value`, so
 * `canonicalJson` and every encoding of a value built around it reuse the string (the same string,
 * not a copy of it). The caller guarantees `value` is such a copy and `encoding` its encoding.
 */
export function keepEncoding(value: object, encoding: string): void {
  known.set(value, encoding);
}

/**
 * Remembers that the deep-frozen canonical copy `value` enumerates its keys, at every depth, in
 * canonical order, so `JSON.stringify(value)` is its canonical encoding: the encoding is written
 * again when asked for instead of kept. Inputs are held this way (see `stringifiesCanonically`):
 * kept texts of large inputs cost much memory, and writing an input again takes native
 * stringifies, not a canonical encode (see docs/design/decisions/README.md#inputs-restringified).
 */
export function keepStringifiable(value: object): void {
  stringifiable.add(value);
}

/** Deep-frozen canonical copies whose encoding is `JSON.stringify` of them (see `keepStringifiable`). */
const stringifiable = new WeakSet<object>();

/** The remembered encoding of a deep-frozen canonical copy, if any (written again for a stringifiable one). */
export function keptEncoding(value: object): string | undefined {
  return known.get(value) ?? (stringifiable.has(value) ? JSON.stringify(value) : undefined);
}

/** Whether `value` is a deep-frozen canonical copy whose encoding is `JSON.stringify` of it (see keepStringifiable). */
export function isStringifiable(value: object): boolean {
  return stringifiable.has(value);
}

/**
 * Whether `value` is a deep-frozen canonical copy whose encoding is known (kept or stringifiable), without writing it.
 */
export function hasKnownEncoding(value: object): boolean {
  return known.has(value) || stringifiable.has(value);
}

/**
 * Whether `JSON.stringify(value)` gives the canonical encoding of `value`, a value parsed from
 * JSON or copied by `canonicalCopy` (no `undefined` members, finite numbers): every object
 * enumerates its keys in canonical order. V8 enumerates integer-like keys first and in numeric
 * order, so an object holding some may not (labels `"9"` and `"10"`: canonical order puts `"10"`
 * first, V8 enumerates `"9"` first).
 */
export function stringifiesCanonically(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return true;
  if (Array.isArray(value)) {
    for (const item of value as unknown[]) if (!stringifiesCanonically(item)) return false;
    return true;
  }
  const record = value as Record<string, unknown>;
  let previous: string | undefined;
  for (const key in record) {
    if (previous !== undefined && !(previous < key)) return false;
    if (!stringifiesCanonically(record[key])) return false;
    previous = key;
  }
  return true;
}

/**
 * Parts at least this long are linked into the encoding of what holds them instead of copied
 * (see `joinParts`).
 */
const LINKED_PART = 1024;

/**
 * `open + parts.join(',') + close`, the same text. Long parts are joined by string
 * concatenation, which in V8 links the part's text instead of copying it: a large part shared
 * by many values (e.g. a group of endpoints in the ServiceEntries of every consumer) is held
 * once, not once per value whose encoding is kept. Runs of short parts are copied together.
 */
function joinParts(open: string, parts: readonly string[], close: string): string {
  if (!parts.some((p) => p.length >= LINKED_PART)) return `${open}${parts.join(',')}${close}`;
  let out = open;
  let run: string[] = [];
  let first = true;
  const add = (text: string): void => {
    out = first ? out + text : out + ',' + text;
    first = false;
  };
  for (const part of parts) {
    if (part.length < LINKED_PART) {
      run.push(part);
      continue;
    }
    if (run.length > 0) add(run.join(','));
    run = [];
    add(part);
  }
  if (run.length > 0) add(run.join(','));
  return out + close;
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
  const cached = keptEncoding(obj) ?? concatEncoding(obj);
  if (cached !== undefined) return cached;
  if (seen.has(obj)) throw invalid('cyclic value');
  seen.add(obj);
  objectEncodes += 1;
  let out: string;
  if (Array.isArray(obj)) {
    out = joinParts(
      '[',
      obj.map((item: unknown) => (item === undefined ? 'null' : encode(item, seen))),
      ']',
    );
  } else {
    const record = obj as Record<string, unknown>;
    const parts: string[] = [];
    for (const key of Object.keys(record).sort()) {
      const member = record[key];
      if (member === undefined) continue;
      parts.push(`${JSON.stringify(key)}:${encode(member, seen)}`);
    }
    out = joinParts('{', parts, '}');
  }
  seen.delete(obj);
  return out;
}

/**
 * The canonical encoding of `value` and a deep-frozen copy of it equal to
 * `JSON.parse(encoding)` (keys in canonical order, `undefined` members gone, -0 as 0), made in
 * one pass. Parts of `value` that are already such copies are shared, not copied, and their
 * encodings reused. With `keepParts`, the encodings of the copy's larger parts are remembered
 * for the next value built around them. Throws like `canonicalJson`.
 */
export function canonicalCopy(value: unknown, keepParts: boolean): CanonicalCopy {
  return copyEncode(value, new Set(), keepParts, false);
}

export interface CanonicalCopy {
  readonly encoding: string;
  readonly copy: unknown;
  /**
   * Whether `encoding` links the text of a part that is kept elsewhere (a remembered part, or the
   * parts of a concatenation) instead of holding its own copy. Such an encoding must not be kept
   * with the copy: the first consumer that needs it flat (a hash, a Buffer, a socket write) makes
   * V8 flatten it in place, and the kept string then holds a private copy of every shared part.
   */
  readonly shared: boolean;
}

/**
 * A deep-frozen canonical copy of a part of a resource (e.g. one endpoint of a ServiceEntry)
 * whose encoding is remembered whatever its size: a part shared by many resources is encoded
 * once and each resource holding it reuses both the object and its encoding.
 */
export function canonicalPart<T>(value: T): T {
  if (value !== null && typeof value === 'object' && hasKnownEncoding(value)) return value;
  const { encoding, copy } = copyEncode(value, new Set(), true);
  if (copy !== null && typeof copy === 'object') known.set(copy, encoding);
  return copy as T;
}

/** Whether `value` is a deep-frozen canonical part or copy built here (it can never change). */
export function isCanonicalPart(value: unknown): boolean {
  return value !== null && typeof value === 'object' && (hasKnownEncoding(value) || concatenations.has(value));
}

/**
 * Concatenations built by `canonicalConcat`, with their non-empty parts. Their encoding is
 * computed from the parts' encodings on demand and not kept: a concatenation is usually unique
 * to one resource (e.g. the endpoints of one consumer's ServiceEntry) while its parts are
 * shared by many, so keeping each concatenation's text would hold the same bytes many times.
 */
const concatenations = new WeakMap<object, readonly (readonly unknown[])[]>();

/** The encodings of concatenation parts without their brackets, by part. */
const innerEncodings = new WeakMap<object, string>();

function concatEncoding(value: object): string | undefined {
  const parts = concatenations.get(value);
  if (parts === undefined) return undefined;
  return joinParts('[', parts.map(innerEncoding), ']');
}

/** UTF-8 bytes of concatenation parts' inner encodings, by part. */
const innerBuffers = new WeakMap<object, Uint8Array>();

/**
 * The UTF-8 bytes of a concatenation part's inner encoding. A part is shared by the lists of
 * many resources (an endpoint group, by the ServiceEntry of every consumer): each output's hash
 * reads these bytes instead of converting the same text again.
 */
function innerBytes(part: readonly unknown[]): Uint8Array {
  let bytes = innerBuffers.get(part);
  if (bytes === undefined) {
    bytes = Buffer.from(innerEncoding(part));
    innerBuffers.set(part, bytes);
  }
  return bytes;
}

function innerEncoding(part: readonly unknown[]): string {
  let inner = innerEncodings.get(part);
  if (inner === undefined) {
    inner = (known.get(part) as string).slice(1, -1);
    innerEncodings.set(part, inner);
  }
  return inner;
}

/**
 * The deep-frozen concatenation of canonical arrays (each made by `canonicalPart`), encoded
 * from its parts' encodings: a resource holding it is encoded without visiting its items one by
 * one, and every part's objects (and their encodings) are shared with every other
 * concatenation that holds the part. Throws MESHRELAY_ERR_INVALID_RESOURCE when a part is not a
 * canonical array.
 */
export function canonicalConcat<T>(parts: readonly (readonly T[])[]): readonly T[] {
  for (const part of parts) {
    if (!Array.isArray(part) || !known.has(part))
      throw invalid('a concatenation part is not a canonical array (see canonicalPart)');
  }
  const nonEmpty = parts.filter((p) => p.length > 0);
  const out = Object.freeze(nonEmpty.flat() as T[]);
  concatenations.set(out, nonEmpty);
  return out;
}

/** The parts of a concatenation made by `canonicalConcat`, or undefined for any other value. */
export function concatParts<T>(value: readonly T[]): readonly (readonly T[])[] | undefined {
  return concatenations.get(value) as readonly (readonly T[])[] | undefined;
}

/**
 * Remembered encodings at most this long are appended whole by `canonicalPieces`. A longer one
 * may link the text of its parts (see `joinParts`), and a reader that needs it flat would make V8
 * flatten it in place, so the remembered string would hold a private copy of every part it links:
 * its members are appended instead.
 */
const WHOLE_KEPT_PIECE = 2 * 1024;

/**
 * Appends the canonical encoding of `value` to `out` in pieces whose concatenation is
 * `canonicalJson(value)`: strings, and for each part of a concatenation its UTF-8 bytes, made
 * once per part (see `innerBytes`). Short remembered encodings are appended as the strings kept.
 * A consumer that reads the text once (a hash) so takes the shared parts as they are, instead of
 * flattening a linked encoding into a copy of all of them and converting that copy to UTF-8
 * again for every resource that holds them. Throws like `canonicalJson`.
 */
export function canonicalPieces(value: unknown, out: (string | Uint8Array)[]): void {
  appendPieces(value, out, new Set());
}

function appendPieces(value: unknown, out: (string | Uint8Array)[], seen: Set<object>): void {
  if (value === null || typeof value !== 'object') {
    out.push(encode(value, seen));
    return;
  }
  const kept = known.get(value);
  if (kept !== undefined && kept.length <= WHOLE_KEPT_PIECE) {
    out.push(kept);
    return;
  }
  // Written here, so flat and not shared: one piece whatever its length.
  if (stringifiable.has(value)) {
    out.push(JSON.stringify(value));
    return;
  }
  const parts = concatenations.get(value);
  if (parts !== undefined) {
    out.push('[');
    for (const [i, part] of parts.entries()) {
      if (i > 0) out.push(',');
      out.push(innerBytes(part));
    }
    out.push(']');
    return;
  }
  if (seen.has(value)) throw invalid('cyclic value');
  seen.add(value);
  if (Array.isArray(value)) {
    out.push('[');
    for (const [i, item] of (value as unknown[]).entries()) {
      if (i > 0) out.push(',');
      appendPieces(item === undefined ? null : item, out, seen);
    }
    out.push(']');
  } else {
    const record = value as Record<string, unknown>;
    let first = true;
    out.push('{');
    for (const key of Object.keys(record).sort()) {
      const member = record[key];
      if (member === undefined) continue;
      out.push(`${first ? '' : ','}${JSON.stringify(key)}:`);
      first = false;
      appendPieces(member, out, seen);
    }
    out.push('}');
  }
  seen.delete(value);
}

/** `keepSelf` false: `value`'s own encoding is not remembered as a part (its caller decides; see canonicalResource). */
function copyEncode(value: unknown, seen: Set<object>, keepParts: boolean, keepSelf = true): CanonicalCopy {
  if (value === null || typeof value !== 'object') {
    const encoding = encode(value, seen);
    return { encoding, copy: typeof value === 'number' && Object.is(value, -0) ? 0 : value, shared: false };
  }
  const cached = known.get(value) ?? concatEncoding(value);
  if (cached !== undefined) return { encoding: cached, copy: value, shared: true };
  if (stringifiable.has(value)) return { encoding: JSON.stringify(value), copy: value, shared: false };
  if (seen.has(value)) throw invalid('cyclic value');
  seen.add(value);
  let encoding: string;
  let copy: unknown;
  // joinParts links the parts of LINKED_PART or more; a shared one among them makes this encoding shared.
  let shared = false;
  if (Array.isArray(value)) {
    const items = value.map((item: unknown) => copyEncode(item === undefined ? null : item, seen, keepParts));
    encoding = joinParts(
      '[',
      items.map((i) => i.encoding),
      ']',
    );
    copy = Object.freeze(items.map((i) => i.copy));
    shared = items.some((i) => i.shared && i.encoding.length >= LINKED_PART);
  } else {
    const record = value as Record<string, unknown>;
    const parts: string[] = [];
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(record).sort()) {
      const member = record[key];
      if (member === undefined) continue;
      const part = copyEncode(member, seen, keepParts);
      const item = `${JSON.stringify(key)}:${part.encoding}`;
      parts.push(item);
      if (part.shared && item.length >= LINKED_PART) shared = true;
      // JSON.parse makes "__proto__" an own property; so does this copy (a plain assignment would set the prototype).
      if (key === '__proto__')
        Object.defineProperty(out, key, { value: part.copy, enumerable: true, writable: true, configurable: true });
      else out[key] = part.copy;
    }
    encoding = joinParts('{', parts, '}');
    copy = Object.freeze(out);
  }
  seen.delete(value);
  if (keepParts && keepSelf && encoding.length >= MIN_KEPT_PART && encoding.length <= MAX_KEPT_PART) {
    known.set(copy as object, encoding);
    shared = true;
  }
  return { encoding, copy, shared };
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
