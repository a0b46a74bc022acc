/** Timing of one benchmark figure: warm-ups, then timed runs with the monotonic clock. */
import { MeshrelayError } from '@meshrelay/api';

export interface MeasureOptions {
  readonly warmups: number;
  readonly runs: number;
}

export interface Measurement<T> {
  readonly name: string;
  /** Wall time of each timed run, in milliseconds, in run order. */
  readonly samplesMs: readonly number[];
  readonly medianMs: number;
  readonly minMs: number;
  readonly maxMs: number;
  /** What the last timed run returned (kept so the work cannot be optimised away). */
  readonly result: T;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', 'median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/**
 * Runs `work` `warmups` times untimed, then `runs` times timed with process.hrtime.bigint().
 * `check` sees every result (warm-ups included) and throws if one is wrong, so a figure is
 * never reported for work that did not do what it claims; it runs outside the timed span.
 */
export function measure<T>(name: string, options: MeasureOptions, work: () => T, check: (result: T) => void = () => {}): Measurement<T> {
  if (options.runs < 1) throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', `${name}: at least one timed run is needed`);
  for (let i = 0; i < options.warmups; i++) check(work());
  const samplesMs: number[] = [];
  let result: T | undefined;
  for (let i = 0; i < options.runs; i++) {
    const start = process.hrtime.bigint();
    const value = work();
    const end = process.hrtime.bigint();
    samplesMs.push(Number(end - start) / 1e6);
    check(value);
    result = value;
  }
  return {
    name,
    samplesMs,
    medianMs: median(samplesMs),
    minMs: Math.min(...samplesMs),
    maxMs: Math.max(...samplesMs),
    result: result as T,
  };
}
