/**
 * Whether a tier's workload fits in this process before it is generated. The bench process holds
 * every cluster's input (the baseline translates them all), and a shape that does not fit would
 * end the process with V8's out-of-memory abort: no section would be written. So the workload
 * phase first builds one cluster of the shape, measures the heap it keeps, and stops the run with
 * the projection when all clusters would not fit under this process's heap limit.
 */
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { MeshrelayError } from '@meshrelay/api';
import { generateClusterInput, type WorkloadShape } from '../workload.ts';

/** Share of the heap limit the inputs may take: the baseline's translation needs the rest. */
const INPUT_SHARE = 0.4;

export interface MemoryProjection {
  readonly perClusterBytes: number;
  readonly projectedBytes: number;
  readonly heapLimitBytes: number;
}

function collect(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** Heap kept by one cluster's input of `shape`, times the clusters, against the heap limit. */
export function projectWorkloadMemory(shape: WorkloadShape): MemoryProjection {
  collect();
  const before = process.memoryUsage().heapUsed;
  const one = generateClusterInput(shape, 0);
  collect();
  const perClusterBytes = Math.max(0, process.memoryUsage().heapUsed - before);
  if (one.resources.length === 0)
    throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', 'the probe cluster has no resources');
  return {
    perClusterBytes,
    projectedBytes: perClusterBytes * shape.clusters,
    heapLimitBytes: getHeapStatistics().heap_size_limit,
  };
}

const gib = (bytes: number): string => `${(bytes / 2 ** 30).toFixed(1)} GiB`;

/** Throws MESHRELAY_ERR_INVALID_CONFIG naming the projection when the workload does not fit. */
export function assertWorkloadFits(shape: WorkloadShape): MemoryProjection {
  const p = projectWorkloadMemory(shape);
  if (p.projectedBytes > p.heapLimitBytes * INPUT_SHARE) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      `the workload does not fit in this process: one cluster's inputs keep ${(p.perClusterBytes / 2 ** 20).toFixed(0)} MiB of heap, so ${shape.clusters} clusters would keep ~${gib(p.projectedBytes)}; ` +
        `the heap limit is ${gib(p.heapLimitBytes)} and the inputs may take ${Math.round(INPUT_SHARE * 100)} % of it (the baseline's translation needs the rest). ` +
        `Run with NODE_OPTIONS=--max-old-space-size=<MiB> on a machine with the memory for it`,
    );
  }
  return p;
}
