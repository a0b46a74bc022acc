/** A protobuf Duration as protobufjs' fromObject takes it. */
export interface ProtoDuration {
  readonly seconds: number;
  readonly nanos: number;
}

const UNIT_NANOS: Readonly<Record<string, number>> = { h: 3600e9, m: 60e9, s: 1e9, ms: 1e6, us: 1e3, µs: 1e3, ns: 1 };

/**
 * Parses an Istio duration (`1.5s`, `250ms`, `1h2m`) into a Duration; undefined when the
 * text is not one (the output passed Istio's schema, so that is rare and reported by the caller).
 */
export function parseDuration(text: unknown): ProtoDuration | undefined {
  if (typeof text !== 'string' || text === '') return undefined;
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/g)];
  if (parts.map((p) => p[0]).join('') !== text) return undefined;
  let nanos = 0;
  for (const p of parts) nanos += Number(p[1]) * (UNIT_NANOS[p[2] ?? ''] ?? 0);
  nanos = Math.round(nanos);
  return { seconds: Math.floor(nanos / 1e9), nanos: nanos % 1e9 };
}
