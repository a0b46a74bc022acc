/** Text rendering for terminals: aligned tables, short ages and hashes, shell-safe words. */

const COLUMN_GAP = '   ';

/** Left-aligned columns as wide as their widest cell, one line per row, ending in a newline. */
export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    widths
      .map((w, i) => (i === widths.length - 1 ? (cells[i] ?? '') : (cells[i] ?? '').padEnd(w)))
      .join(COLUMN_GAP)
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n') + '\n';
}

/**
 * Time since `since` in the largest sensible unit ("42s", "7m", "5h", "3d").
 * "-" when `since` is missing or not a date; "0s" for a time in the future (clock skew).
 */
export function formatAge(since: string | null | undefined, now: Date): string {
  if (since === null || since === undefined) return '-';
  const then = Date.parse(since);
  if (Number.isNaN(then)) return '-';
  return formatSeconds(Math.max(0, Math.floor((now.getTime() - then) / 1000)));
}

/**
 * Time from `now` until `until`, in the units of formatAge; "-" when `until` is
 * missing or not a date, "0s" when it has passed.
 */
export function formatTimeLeft(until: string | null | undefined, now: Date): string {
  if (until === null || until === undefined) return '-';
  const then = Date.parse(until);
  if (Number.isNaN(then)) return '-';
  return formatSeconds(Math.max(0, Math.ceil((then - now.getTime()) / 1000)));
}

function formatSeconds(seconds: number): string {
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 120) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h`;
  return `${Math.floor(hours / 24)}d`;
}

/** The first `length` characters of a hash, or "-" when there is none. */
export function shortHash(hash: string | null | undefined, length = 12): string {
  return hash ? hash.slice(0, length) : '-';
}

const SHELL_SAFE = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** Quotes a word for a POSIX shell only when it needs it. */
export function shellQuote(word: string): string {
  if (SHELL_SAFE.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** Pretty JSON with a trailing newline, as every `-o json` prints it. */
export function formatJson(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n';
}
