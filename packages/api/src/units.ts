/** What a value parser gives back: the value, or why the text is not acceptable. */
export type Parsed<T> = { readonly value: T } | { readonly error: string };

/*
 * The one unit dialect of both binaries' flags and meshctl: durations like
 * 250ms, 5s, 3m, 1h, 7d and sizes like 64KiB, 16MiB. A bare number keeps the
 * meaning its flag always documented: milliseconds for the *-ms style duration
 * flags, seconds for the flags that were counted in seconds (token TTLs,
 * certificate lifetime, the safe-start window), bytes for sizes.
 */
const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** What a bare number of a duration flag counts. */
export type BareDurationUnit = 'ms' | 's';

/** The accepted forms of a duration, for error messages. */
export function durationForms(bare: BareDurationUnit = 'ms'): string {
  return `a duration such as 500ms, 30s, 3m, 1h, 7d, or a bare number of ${bare === 's' ? 'seconds' : 'milliseconds'}`;
}

/**
 * "250ms" | "5s" | "3m" | "1h" | "7d" | "200" (a bare number counts `bare`) →
 * milliseconds, at least minMs. The error names the accepted forms.
 */
export function parseDuration(raw: string, minMs = 0, bare: BareDurationUnit = 'ms'): Parsed<number> {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(raw.trim());
  if (!match) return { error: `"${raw}" is not ${durationForms(bare)}` };
  const value = Math.round(Number(match[1]) * (DURATION_UNITS[match[2] ?? bare] ?? 1));
  if (value < minMs) return { error: `${raw} is shorter than ${formatMs(minMs)}` };
  return { value };
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 && ms > 0 ? `${ms / 1000} s` : `${ms} ms`;
}

const SIZE_UNITS: Readonly<Record<string, number>> = { '': 1, b: 1, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 };

/** "16MiB" | "64KiB" | "1048576" → bytes (at least minBytes). */
export function parseByteSize(raw: string, minBytes = 1024): Parsed<number> {
  const match = /^(\d+)\s*([a-zA-Z]*)$/.exec(raw.trim());
  const unit = SIZE_UNITS[match?.[2]?.toLowerCase() ?? 'x'];
  if (!match || unit === undefined)
    return { error: `"${raw}" is not a size such as 64KiB, 16MiB, 1GiB or a bare number of bytes` };
  const value = Number(match[1]) * unit;
  if (value < minBytes) return { error: `${value} bytes is below the minimum of ${minBytes}` };
  return { value };
}
