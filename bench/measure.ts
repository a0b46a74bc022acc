/** Timing of benchmark figures: warm-up rounds, then timed rounds with the monotonic clock. */
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
  /** First and third quartiles: how spread the runs were. */
  readonly p25Ms: number;
  readonly p75Ms: number;
  readonly minMs: number;
  readonly maxMs: number;
  /** What the last timed run returned (kept so the work cannot be optimised away). */
  readonly result: T;
}

/** The q-quantile (0 ≤ q ≤ 1) of `values`, interpolating linearly between the nearest ranks. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', 'quantile of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const rank = q * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return (sorted[low] as number) + ((sorted[high] as number) - (sorted[low] as number)) * (rank - low);
}

export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

export interface Task<T> {
  readonly name: string;
  readonly work: () => T;
  /** Sees every result (warm-ups included), outside the timed span; throws if the work did not do what it claims. */
  readonly check?: (result: T) => void;
}

/**
 * Measures several tasks in interleaved rounds: each round runs every task once, timed with
 * process.hrtime.bigint(), starting at a different task each round. On a machine shared with
 * other work, load and garbage-collection debt then fall on all tasks alike, so the ratios
 * between their medians hold better than if each task ran in its own stretch of time.
 * `warmups` untimed rounds come first. Returns one Measurement per task, in task order.
 */
export function measureInterleaved(tasks: readonly Task<unknown>[], options: MeasureOptions): Measurement<unknown>[] {
  if (options.runs < 1) throw new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', 'at least one timed run is needed');
  const samples = tasks.map((): number[] => []);
  const results: unknown[] = tasks.map(() => undefined);
  for (let round = 0; round < options.warmups + options.runs; round++) {
    const timed = round >= options.warmups;
    for (let step = 0; step < tasks.length; step++) {
      const index = (round + step) % tasks.length;
      const task = tasks[index] as Task<unknown>;
      const start = process.hrtime.bigint();
      const value = task.work();
      const end = process.hrtime.bigint();
      task.check?.(value);
      if (!timed) continue;
      (samples[index] as number[]).push(Number(end - start) / 1e6);
      results[index] = value;
    }
  }
  return tasks.map((task, i) => {
    const samplesMs = samples[i] as number[];
    return {
      name: task.name,
      samplesMs,
      medianMs: median(samplesMs),
      p25Ms: quantile(samplesMs, 0.25),
      p75Ms: quantile(samplesMs, 0.75),
      minMs: Math.min(...samplesMs),
      maxMs: Math.max(...samplesMs),
      result: results[i],
    };
  });
}
