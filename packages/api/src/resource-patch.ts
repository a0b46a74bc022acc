import type { Operation } from 'fast-json-patch';
import { BoundedPatcher, PatchMismatch } from './bounded-patch.ts';
import { canonicalJson } from './canonical.ts';
import { MeshrelayError } from './errors.ts';
import { LoopSlicer } from './loop-slicer.ts';
import { DEFAULT_PATCH_LIMITS, PatchBudget } from './patch-budget.ts';
import { isRecord, resourceId, type Resource } from './resource.ts';

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
 * compared member by member. Arrays keep their common head and tail and align the items between
 * (a shortest edit script): an endpoint of a ServiceEntry that changes, goes, comes or moves (its
 * address changed, so it sorts elsewhere) costs that endpoint, not the items it passes
 * (fast-json-patch's `compare` would replace every item after a removed or moved one).
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
  while (tail < a.length - head && tail < b.length - head && same(a[a.length - 1 - tail], b[b.length - 1 - tail]))
    tail++;
  const middleA = a.slice(head, a.length - tail);
  const middleB = b.slice(head, b.length - tail);
  const script = editScript(middleA.map(canonicalJson), middleB.map(canonicalJson)) ?? [
    { kind: 'change', removed: middleA.length, added: middleB.length },
  ];
  // `at` is where the next item of `a` sits in the array as patched so far.
  let at = head;
  let fromA = 0;
  let fromB = 0;
  for (const step of script) {
    if (step.kind === 'keep') {
      at += step.count;
      fromA += step.count;
      fromB += step.count;
      continue;
    }
    // A run of removed items beside a run of added ones: the first pairs are changed in place
    // (a nested diff names only what differs), the surplus removed last first, or added.
    const paired = Math.min(step.removed, step.added);
    for (let i = 0; i < paired; i++) diff(middleA[fromA + i], middleB[fromB + i], `${path}/${at + i}`, ops);
    for (let i = step.removed - 1; i >= paired; i--) ops.push({ op: 'remove', path: `${path}/${at + i}` });
    for (let i = paired; i < step.added; i++)
      ops.push({ op: 'add', path: `${path}/${at + i}`, value: middleB[fromB + i] });
    at += step.added;
    fromA += step.removed;
    fromB += step.added;
  }
}

type EditStep =
  | { readonly kind: 'keep'; readonly count: number }
  | { readonly kind: 'change'; readonly removed: number; readonly added: number };

/** Past this many removed plus added items an alignment is not searched for: the items are compared by index. */
const MAX_EDIT_DISTANCE = 64;

/**
 * The shortest edit script from `a` to `b` (Myers' O((N+M)·D) search over the items' canonical
 * encodings), as runs of kept items and of changed ones (items removed, then items added, at
 * one place); undefined when it needs more than MAX_EDIT_DISTANCE removals and additions.
 */
function editScript(a: readonly string[], b: readonly string[]): EditStep[] | undefined {
  const n = a.length;
  const m = b.length;
  const offset = MAX_EDIT_DISTANCE + 1;
  const frontier = new Int32Array(2 * offset + 1);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= MAX_EDIT_DISTANCE; d++) {
    trace.push(frontier.slice());
    for (let k = -d; k <= d; k += 2) {
      const down = k === -d || (k !== d && (frontier[offset + k - 1] as number) < (frontier[offset + k + 1] as number));
      let x = down ? (frontier[offset + k + 1] as number) : (frontier[offset + k - 1] as number) + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      frontier[offset + k] = x;
      if (x >= n && y >= m) return stepsOf(trace, offset, n, m, d);
    }
  }
  return undefined;
}

/** Walks a Myers search's frontiers back from (n, m) into runs of kept and changed items. */
function stepsOf(trace: readonly Int32Array[], offset: number, n: number, m: number, distance: number): EditStep[] {
  const moves: ('keep' | 'remove' | 'add')[] = [];
  let x = n;
  let y = m;
  for (let d = distance; d >= 0; d--) {
    const frontier = trace[d] as Int32Array;
    const k = x - y;
    const down = k === -d || (k !== d && (frontier[offset + k - 1] as number) < (frontier[offset + k + 1] as number));
    const prevK = down ? k + 1 : k - 1;
    const prevX = frontier[offset + prevK] as number;
    const prevY = prevX - prevK;
    for (; x > prevX && y > prevY; x--, y--) moves.push('keep');
    if (d > 0) moves.push(down ? 'add' : 'remove');
    x = prevX;
    y = prevY;
  }
  moves.reverse();
  const steps: EditStep[] = [];
  for (const move of moves) {
    const last = steps[steps.length - 1];
    if (move === 'keep') {
      if (last?.kind === 'keep') steps[steps.length - 1] = { kind: 'keep', count: last.count + 1 };
      else steps.push({ kind: 'keep', count: 1 });
    } else {
      const removed = move === 'remove' ? 1 : 0;
      if (last?.kind === 'change')
        steps[steps.length - 1] = { kind: 'change', removed: last.removed + removed, added: last.added + 1 - removed };
      else steps.push({ kind: 'change', removed, added: 1 - removed });
    }
  }
  return steps;
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
 * `base` with `patch` applied, as a new object (`base`, frozen or not, is left as it is; the
 * result shares the parts the patch does not change). Each operation is priced against `budget`
 * before it is done (see BoundedPatcher): past a limit the patch is refused with
 * MESHRELAY_ERR_DELTA_LIMIT naming it. Refused with MESHRELAY_ERR_DELTA_BASE_MISMATCH when the
 * operations are not a JSON array, do not apply (a path the base lacks, a failed `test`, a
 * prototype member), or give something that is not a resource with the patch's key: each means
 * the sender's base is not this one. `baseBytes`, the canonical size of `base`, holds the resource
 * to `budget`'s byte limit on its own; without it only the snapshot's growth is held to it.
 * Gives the event loop turns between operations.
 */
export async function applyResourcePatch(
  base: Resource,
  patch: ResourcePatch,
  budget = new PatchBudget(DEFAULT_PATCH_LIMITS, Number.MAX_SAFE_INTEGER),
  slicer = new LoopSlicer(),
  baseBytes?: number,
): Promise<Resource> {
  let ops: unknown;
  try {
    ops = JSON.parse(patch.ops);
  } catch (err) {
    throw mismatch(patch.key, 'its operations are not JSON', err);
  }
  if (!Array.isArray(ops)) throw mismatch(patch.key, 'its operations are not a JSON array');
  const patcher = new BoundedPatcher(patch.key, base, baseBytes, budget);
  try {
    await patcher.apply(ops, slicer);
  } catch (err) {
    if (err instanceof PatchMismatch) throw mismatch(patch.key, err.message, err);
    throw err;
  }
  const result = patcher.result;
  if (
    !isRecord(result) ||
    typeof result['apiVersion'] !== 'string' ||
    typeof result['kind'] !== 'string' ||
    !isRecord(result['metadata'])
  ) {
    throw mismatch(patch.key, 'the result is not a resource (needs apiVersion, kind, metadata)');
  }
  const id = resourceId(result as unknown as Resource);
  if (id !== patch.key) throw mismatch(patch.key, `the result is ${id}`);
  return result as unknown as Resource;
}

function mismatch(key: string, reason: string, cause?: unknown): MeshrelayError {
  return new MeshrelayError(
    'MESHRELAY_ERR_DELTA_BASE_MISMATCH',
    `patch of ${key} does not apply to the base: ${reason}`,
    cause === undefined ? undefined : { cause },
  );
}
