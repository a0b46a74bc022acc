import { MeshrelayError } from './errors.ts';
import type { LoopSlicer } from './loop-slicer.ts';
import type { PatchBudget } from './patch-budget.ts';

type Container = Record<string, unknown> | unknown[];

interface Measure {
  readonly bytes: number;
  /** Nesting of the value: 0 for a scalar, 1 for a container of scalars. */
  readonly depth: number;
}

/** An RFC 6902 operation that did not apply: the sender's base is not this one. */
export class PatchMismatch extends Error {}

/**
 * Applies RFC 6902 operations to a JSON document without changing it, pricing each operation
 * against `budget` before doing it. Containers are copied on first write (the rest of the
 * result shares the base's, which must not change while it is in use), so an operation costs
 * the path it walks and the containers it copies, not the document. `copy` shares the copied
 * value: the result is a value, never mutated later, and every write copies a shared container
 * first. Sizes and depths are measured as each operation applies and cut off at the limits,
 * so a patch cannot make a value larger or deeper than a full snapshot may be, nor take
 * longer than its work budget; between operations the event loop gets its turns.
 */
export class BoundedPatcher {
  readonly #key: string;
  readonly #budget: PatchBudget;
  /** Containers this patcher made (copies): the only ones it writes into. */
  readonly #owned = new Set<object>();
  /** Measures of containers that are not owned (they do not change). */
  readonly #measures = new WeakMap<object, Measure>();
  #root: unknown;
  /** The canonical size of the base, when the resource's own size is to be checked (see constructor). */
  readonly #baseBytes: number | undefined;
  /** Bytes the operations so far added to the base's canonical size (negative when they took some away). */
  #growth = 0;

  /**
   * `baseBytes` is the canonical size of `base`: given, the resource is held to the byte limit on
   * its own; left out, only the snapshot's growth is (enough when the budget knows the size of the
   * base snapshot, which holds the resource), and the base is never measured whole.
   */
  constructor(key: string, base: unknown, baseBytes: number | undefined, budget: PatchBudget) {
    this.#key = key;
    this.#root = base;
    this.#baseBytes = baseBytes;
    this.#budget = budget;
  }

  get result(): unknown {
    return this.#root;
  }

  /**
   * The canonical size of `result`, as kept up to date operation by operation (measured when the base's size was not
   * given).
   */
  get bytes(): number {
    return this.#baseBytes === undefined ? this.#measure(this.#root, Infinity).bytes : this.#baseBytes + this.#growth;
  }

  /** Applies `ops` in order, refusing (MeshrelayError DELTA_LIMIT, or PatchMismatch) before any limit is passed. */
  async apply(ops: readonly unknown[], slicer: LoopSlicer): Promise<void> {
    this.#budget.countOps(this.#key, ops.length);
    for (const [i, op] of ops.entries()) {
      this.#applyOne(op, i);
      if (slicer.due()) await slicer.yield();
    }
  }

  #applyOne(raw: unknown, index: number): void {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      throw new PatchMismatch(`operation ${index} is not an object`);
    const op = raw as Record<string, unknown>;
    const path = pointer(op['path'], index, 'path');
    this.#budget.charge(this.#key, path.length + 1);
    switch (op['op']) {
      case 'add':
        return this.#add(path, valueOf(op, index));
      case 'remove':
        return void this.#remove(path);
      case 'replace':
        this.#remove(path, true);
        return this.#add(path, valueOf(op, index), true);
      case 'move': {
        const from = pointer(op['from'], index, 'from');
        if (from.length < path.length && from.every((t, i) => t === path[i]))
          throw new PatchMismatch(`operation ${index} moves a value into itself`);
        return this.#add(path, this.#remove(from));
      }
      case 'copy': {
        const value = this.#read(pointer(op['from'], index, 'from'));
        this.#disown(value);
        return this.#add(path, value);
      }
      case 'test':
        if (!this.#equal(this.#read(path), valueOf(op, index)))
          throw new PatchMismatch(`test operation ${index} failed at ${formatPointer(path)}`);
        return;
      default:
        throw new PatchMismatch(`operation ${index} has no known "op" (${JSON.stringify(op['op'])})`);
    }
  }

  /**
   * Puts `value` at `path` (inserting into an array, setting an object member); `replacing` when the place was just
   * emptied by replace.
   */
  #add(path: readonly string[], value: unknown, replacing = false): void {
    // A value larger than the room left is refused while it is measured, before the rest of it is walked.
    const room = Math.min(
      this.#budget.growthLeft,
      this.#baseBytes === undefined ? Infinity : this.#budget.maxBytes - this.#baseBytes - this.#growth,
    );
    const measure = this.#measure(
      value,
      this.#budget.limits.maxDepth - path.length,
      path,
      path.length === 0 ? Infinity : room,
    );
    this.#budget.checkDepth(this.#key, path.length + measure.depth, formatPointer(path));
    if (path.length === 0) {
      this.#resize(measure.bytes - this.bytes);
      this.#root = value;
      return;
    }
    const parent = this.#writable(path.slice(0, -1));
    const token = path[path.length - 1] as string;
    if (Array.isArray(parent)) {
      const at = token === '-' && !replacing ? parent.length : arrayIndex(token, parent.length + 1);
      this.#budget.charge(this.#key, parent.length - at + 1);
      this.#resize(measure.bytes + (parent.length > 0 ? 1 : 0));
      parent.splice(at, 0, value);
      return;
    }
    const old = Object.hasOwn(parent, token) ? this.#measure(parent[token], Infinity).bytes + memberBytes(token) : 0;
    this.#resize(memberBytes(token) + measure.bytes - old + (old === 0 && Object.keys(parent).length > 0 ? 1 : 0));
    parent[token] = value;
  }

  /** Takes the value at `path` out and returns it. */
  #remove(path: readonly string[], replacing = false): unknown {
    if (path.length === 0) {
      if (!replacing) throw new PatchMismatch('remove of the whole document');
      return this.#root;
    }
    const parent = this.#writable(path.slice(0, -1));
    const token = path[path.length - 1] as string;
    if (Array.isArray(parent)) {
      const at = arrayIndex(token, parent.length);
      this.#budget.charge(this.#key, parent.length - at);
      const [value] = parent.splice(at, 1);
      this.#resize(-(this.#measure(value, Infinity).bytes + (parent.length > 0 ? 1 : 0)));
      return value;
    }
    if (!Object.hasOwn(parent, token)) throw new PatchMismatch(`no member at ${formatPointer(path)}`);
    const value = parent[token];
    delete parent[token];
    this.#resize(
      -(memberBytes(token) + this.#measure(value, Infinity).bytes + (Object.keys(parent).length > 0 ? 1 : 0)),
    );
    return value;
  }

  #resize(change: number): void {
    this.#growth += change;
    this.#budget.grow(this.#key, this.#baseBytes === undefined ? undefined : this.#baseBytes + this.#growth, change);
  }

  /** The value at `path`, read without copying. */
  #read(path: readonly string[]): unknown {
    let node = this.#root;
    for (let i = 0; i < path.length; i++) node = child(node, path[i] as string, path, i);
    return node;
  }

  /**
   * The container at `path`, owned: each container on the way not owned yet is replaced by a copy (charged by its
   * size).
   */
  #writable(path: readonly string[]): Container {
    this.#root = this.#own(this.#root, []);
    let node = this.#root as Container;
    for (let i = 0; i < path.length; i++) {
      const token = path[i] as string;
      const next = this.#own(child(node, token, path, i), path.slice(0, i + 1));
      if (Array.isArray(node)) node[arrayIndex(token, node.length)] = next;
      else node[token] = next;
      node = next;
    }
    return node;
  }

  #own(value: unknown, path: readonly string[]): Container {
    if (typeof value !== 'object' || value === null)
      throw new PatchMismatch(`${formatPointer(path)} is not an object or array`);
    if (this.#owned.has(value)) return value as Container;
    const copy: Container = Array.isArray(value)
      ? [...(value as unknown[])]
      : { ...(value as Record<string, unknown>) };
    this.#budget.charge(this.#key, Array.isArray(copy) ? copy.length + 1 : Object.keys(copy).length + 1);
    this.#owned.add(copy);
    return copy;
  }

  /**
   * A value about to be shared by two places: its owned containers (only those hold owned ones) are no longer written
   * into.
   */
  #disown(value: unknown): void {
    if (typeof value !== 'object' || value === null || !this.#owned.delete(value)) return;
    const children = Array.isArray(value) ? value : Object.values(value);
    this.#budget.charge(this.#key, children.length);
    for (const c of children) this.#disown(c);
  }

  /**
   * Canonical size and nesting of `value`; refuses it (DELTA_LIMIT) once it nests past
   * `levelsLeft` levels, is found larger than `room` bytes, or its walk passes the work left.
   */
  #measure(value: unknown, levelsLeft: number, where: readonly string[] = [], room = Infinity): Measure {
    if (typeof value !== 'object' || value === null) {
      const bytes = scalarBytes(value);
      if (bytes > room) this.#budget.refuseSize(this.#key, formatPointer(where));
      return { bytes, depth: 0 };
    }
    const known = this.#measures.get(value);
    if (known) {
      if (known.depth > levelsLeft)
        this.#budget.checkDepth(this.#key, this.#budget.limits.maxDepth + 1, formatPointer(where));
      if (known.bytes > room) this.#budget.refuseSize(this.#key, formatPointer(where));
      return known;
    }
    if (levelsLeft < 1) this.#budget.checkDepth(this.#key, this.#budget.limits.maxDepth + 1, formatPointer(where));
    const entries: [string | undefined, unknown][] = Array.isArray(value)
      ? value.map((v) => [undefined, v])
      : Object.entries(value);
    this.#budget.charge(this.#key, entries.length + 1);
    let bytes = 2 + Math.max(0, entries.length - 1);
    let depth = 0;
    for (const [k, v] of entries) {
      const m = this.#measure(v, levelsLeft - 1, where, room - bytes);
      bytes += m.bytes + (k === undefined ? 0 : memberBytes(k));
      if (bytes > room) this.#budget.refuseSize(this.#key, formatPointer(where));
      if (m.depth > depth) depth = m.depth;
    }
    const measure = { bytes, depth: depth + 1 };
    if (!this.#owned.has(value)) this.#measures.set(value, measure);
    return measure;
  }

  /**
   * JSON equality of a value of the document (nested within the depth limit) and an operation's value, charged per item
   * compared.
   */
  #equal(a: unknown, b: unknown): boolean {
    if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return a === b;
    if (Array.isArray(a) !== Array.isArray(b)) return false;
    const ak = Object.keys(a);
    const bk = Object.keys(b);
    this.#budget.charge(this.#key, ak.length + 1);
    if (ak.length !== bk.length) return false;
    const bo = b as Record<string, unknown>;
    return ak.every((k) => Object.hasOwn(bo, k) && this.#equal((a as Record<string, unknown>)[k], bo[k]));
  }
}

/** The child of `node` at `token`, or PatchMismatch naming the path. */
function child(node: unknown, token: string, path: readonly string[], i: number): unknown {
  if (Array.isArray(node)) return node[arrayIndex(token, node.length)];
  if (typeof node === 'object' && node !== null && Object.hasOwn(node, token))
    return (node as Record<string, unknown>)[token];
  throw new PatchMismatch(`no member at ${formatPointer(path.slice(0, i + 1))}`);
}

/** RFC 6901 array index: decimal digits without a leading zero, below `bound`. */
function arrayIndex(token: string, bound: number): number {
  if (!/^(0|[1-9][0-9]{0,15})$/.test(token))
    throw new PatchMismatch(`array index ${JSON.stringify(token)} is not a number`);
  const i = Number(token);
  if (i >= bound) throw new PatchMismatch(`array index ${i} is out of range`);
  return i;
}

/** RFC 6901 pointer → tokens; "__proto__" is refused (it would reach an object's prototype). */
function pointer(value: unknown, index: number, field: string): string[] {
  if (typeof value !== 'string') throw new PatchMismatch(`operation ${index} has no "${field}" string`);
  if (value === '') return [];
  if (!value.startsWith('/'))
    throw new PatchMismatch(`operation ${index}'s ${field} ${JSON.stringify(value)} is not a JSON pointer`);
  const tokens = value
    .slice(1)
    .split('/')
    .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (tokens.includes('__proto__')) throw new PatchMismatch(`operation ${index}'s ${field} names a prototype member`);
  return tokens;
}

function formatPointer(path: readonly string[]): string {
  return path.map((t) => `/${t.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

function valueOf(op: Record<string, unknown>, index: number): unknown {
  if (!Object.hasOwn(op, 'value')) throw new PatchMismatch(`operation ${index} has no "value"`);
  return op['value'];
}

/** Bytes of `"key":` in canonical JSON. */
function memberBytes(key: string): number {
  return Buffer.byteLength(JSON.stringify(key)) + 1;
}

function scalarBytes(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(JSON.stringify(value));
  const text = JSON.stringify(value) as string | undefined;
  if (text === undefined)
    throw new MeshrelayError('MESHRELAY_ERR_DELTA_BASE_MISMATCH', `a value JSON cannot carry (${typeof value})`);
  return text.length;
}
