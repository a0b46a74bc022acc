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
export function ownFirst<T>(
  list: readonly T[] | undefined,
  home: string | undefined,
  workspaceOf: (item: T) => string | undefined,
  usable: (item: T) => boolean,
): T | undefined {
  if (!list || list.length === 0) return undefined;
  return list.find((item) => workspaceOf(item) === (home ?? '')) ?? list.find(usable) ?? list[0];
}

/** What `homeFirst` reads of an output: the resource and the source that owns it (first). */
interface Candidate {
  readonly resource: {
    readonly kind: string;
    readonly metadata: { readonly name: string; readonly namespace?: string };
  };
  readonly sources: readonly string[];
}

/**
 * Orders same-named outputs for `consumer` so the one from the workspace owning their namespace
 * there comes first (the first is kept): an imported resource never replaces the output of a
 * resource the consumer's own workspace defines under the same name. Without a clash, or
 * without workspaces, the list is returned as it is.
 */
export function homeFirst<T extends Candidate>(
  list: readonly T[],
  consumer: string,
  defined: boolean,
  workspaceOf: (cluster: string, namespace: string) => string | undefined,
  ownerOf: (source: string) => string | undefined,
): readonly T[] {
  if (!defined) return list;
  const firstAt = new Map<string, number>();
  let out: T[] | undefined;
  list.forEach((s, i) => {
    const key = `${s.resource.kind}/${s.resource.metadata.namespace ?? ''}/${s.resource.metadata.name}`;
    const first = firstAt.get(key);
    if (first === undefined) {
      firstAt.set(key, i);
      return;
    }
    const home = workspaceOf(consumer, s.resource.metadata.namespace ?? '');
    const current = (out ?? list)[first] as T;
    if (ownerOf(s.sources[0] ?? '') !== home || ownerOf(current.sources[0] ?? '') === home) return;
    out ??= [...list];
    out[first] = s;
    out[i] = current;
  });
  return out ?? list;
}
