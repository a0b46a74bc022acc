/** What a value parser gives back: the value, or why the text is not acceptable. */
export type Parsed<T> = { readonly value: T } | { readonly error: string };

/*
 * The one unit dialect of both binaries' flags: durations like 250ms, 5s, 1m and
 * sizes like 64KiB, 16MiB. A plain number keeps meaning milliseconds or bytes, as
 * the flags always took.
 */
const DURATION_UNITS: Readonly<Record<string, number>> = { '': 1, ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** "250ms" | "5s" | "1m" | "1h" | "200" (ms) → milliseconds. */
export function parseDuration(raw: string, minMs = 0): Parsed<number> {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(raw.trim());
  if (!match) return { error: `"${raw}" is not a duration (e.g. 500ms, 5s, 1m)` };
  const value = Math.round(Number(match[1]) * (DURATION_UNITS[match[2] ?? ''] ?? 1));
  if (value < minMs) return { error: `${raw} is shorter than ${minMs} ms` };
  return { value };
}

const SIZE_UNITS: Readonly<Record<string, number>> = { '': 1, b: 1, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 };

/** "16MiB" | "64KiB" | "1048576" → bytes (at least minBytes). */
export function parseByteSize(raw: string, minBytes = 1024): Parsed<number> {
  const match = /^(\d+)\s*([a-zA-Z]*)$/.exec(raw.trim());
  const unit = SIZE_UNITS[match?.[2]?.toLowerCase() ?? 'x'];
  if (!match || unit === undefined) return { error: `"${raw}" is not a size (e.g. 16MiB, 65536)` };
  const value = Number(match[1]) * unit;
  if (value < minBytes) return { error: `${value} bytes is below the minimum of ${minBytes}` };
  return { value };
}
