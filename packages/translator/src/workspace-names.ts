/**
 * Names belong to workspaces: two workspaces may each define `namespace/name` of a kind. A
 * reference resolves to the referrer's own workspace's resource first, else to the first one
 * (in sorted order) it may use through an import, so another workspace's same-named resource
 * never replaces what a workspace owns.
 */

/** Resources of a kind by `namespace/name`; several when several workspaces use the name. */
export type ByName<T> = ReadonlyMap<string, readonly T[]>;

/** Groups `items` (kept in their order) by the `namespace/name` key `keyOf` gives. */
export function groupByName<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const list = out.get(key);
    if (list) list.push(item);
    else out.set(key, [item]);
  }
  return out;
}

/**
 * The resource a referrer of workspace `home` means among same-named ones: its own workspace's,
 * else the first it may use, else the first (so the caller reports why it may not use it).
 */
export function ownFirst<T>(list: readonly T[] | undefined, home: string | undefined, workspaceOf: (item: T) => string | undefined, usable: (item: T) => boolean): T | undefined {
  if (!list || list.length === 0) return undefined;
  return list.find((item) => workspaceOf(item) === (home ?? '')) ?? list.find(usable) ?? list[0];
}
