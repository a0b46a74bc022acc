/**
 * The baseline the live figures are compared with, measured in the same run: the same changes
 * through a naive full recompute + full resend (a fresh `translate()` of every input, then every
 * cluster's output framed full, as a plane without incremental translation or deltas sends it),
 * and the encoding floor of the same outputs (canonical JSON; gzip + protobufjs frames).
 */
import {
  buildInputSnapshot,
  encodeSnapshotFor,
  snapshotEncoding,
  type InputSnapshot,
  type OutputSnapshot,
} from '@meshrelay/api';
import {
  DEFAULT_VIP_CIDR,
  allocateVips,
  createIstioValidator,
  translate,
  virtualDestinationKeys,
} from '@meshrelay/translator';
import { canonicalizeOutputs, frameOutputs } from '../floor.ts';
import { measureInterleaved, type Measurement } from '../measure.ts';
import type { Workload } from '../workload.ts';
import { applyEndpointChange, endpointChange } from './endpoint-change.ts';

export interface BaselineRun {
  /** translate() of all inputs plus full framing of every output, ms. */
  readonly ms: number;
  readonly translateMs: number;
  /** Clusters whose output hash changed against the previous run. */
  readonly affected: readonly string[];
  /** Full wire bytes of each affected cluster's new output. */
  readonly fullBytes: ReadonlyMap<string, number>;
}

export interface OutputSize {
  readonly resources: number;
  readonly canonicalBytes: number;
  readonly wireBytes: number;
}

export interface Baseline {
  /** The first run, on the initial inputs (every cluster counts as affected). */
  cold?: BaselineRun;
  readonly changes: BaselineRun[];
  /** Largest output of the initial translation, by canonical bytes. */
  largestOutput?: OutputSize & { readonly cluster: string };
  /**
   * A fresh FileOutputWriter's full apply of one real agent's output, in this process (the agents' CPU per change is
   * compared with it).
   */
  agentFullApply?: {
    readonly cluster: string;
    readonly resources: number;
    readonly bytes: number;
    readonly cpuSeconds: number;
  };
  floors?: {
    readonly canonical: Measurement<unknown>;
    readonly wire: Measurement<unknown>;
    readonly wireOne: Measurement<unknown>;
    readonly oneCluster: string;
  };
}

const elapsed = (from: number): number => performance.now() - from;

/** Incremental state of the naive plane: the inputs so far and the outputs it last computed. */
export class NaivePlane {
  readonly #inputs: Map<string, InputSnapshot>;
  readonly #workload: Workload;
  readonly #validator = createIstioValidator();
  readonly #vips: ReturnType<typeof allocateVips>;
  outputs: ReadonlyMap<string, OutputSnapshot> = new Map();

  constructor(workload: Workload) {
    this.#workload = workload;
    this.#inputs = new Map(workload.inputs);
    this.#vips = allocateVips(new Map(), virtualDestinationKeys(workload.inputs), DEFAULT_VIP_CIDR);
  }

  /** Applies change `index` to the inputs (as the load generator does), then recomputes and reframes everything. */
  async change(index: number): Promise<BaselineRun> {
    const change = endpointChange(this.#workload.shape, index);
    const before = this.#inputs.get(change.cluster) as InputSnapshot;
    this.#inputs.set(
      change.cluster,
      buildInputSnapshot({
        cluster: before.cluster,
        epoch: before.epoch,
        generation: before.generation + 1,
        resources: applyEndpointChange(before.resources, change),
      }),
    );
    return this.recompute();
  }

  async recompute(): Promise<BaselineRun> {
    const started = performance.now();
    const result = translate(
      { inputs: this.#inputs, clusters: this.#workload.clusters, vips: this.#vips },
      this.#validator,
    );
    const translateMs = elapsed(started);
    const fullBytes = new Map<string, number>();
    for (const [cluster, output] of result.outputs)
      fullBytes.set(cluster, (await encodeSnapshotFor(undefined, output)).wireBytes);
    const ms = elapsed(started);
    const affected = [...result.outputs]
      .filter(([cluster, o]) => this.outputs.get(cluster)?.hash !== o.hash)
      .map(([cluster]) => cluster);
    this.outputs = result.outputs;
    return { ms, translateMs, affected, fullBytes: new Map(affected.map((c) => [c, fullBytes.get(c) as number])) };
  }
}

/** The largest output, by canonical bytes, with its wire size. */
export function largestOutput(
  outputs: ReadonlyMap<string, OutputSnapshot>,
  fullBytes: ReadonlyMap<string, number>,
): OutputSize & { cluster: string } {
  const [cluster, output] = [...outputs].reduce((a, b) => (b[1].bytes > a[1].bytes ? b : a));
  return {
    cluster,
    resources: output.resources.length,
    canonicalBytes: output.bytes,
    wireBytes: fullBytes.get(cluster) ?? 0,
  };
}

/** Canonical JSON and wire framing of all outputs, and wire framing of one cluster's output, in interleaved rounds. */
export function measureFloors(
  outputs: ReadonlyMap<string, OutputSnapshot>,
  oneCluster: string,
  runs: number,
): NonNullable<Baseline['floors']> {
  const encodings = new Map([...outputs].map(([cluster, o]) => [cluster, snapshotEncoding(o)]));
  const one = new Map([[oneCluster, outputs.get(oneCluster) as OutputSnapshot]]);
  const [canonical, wire, wireOne] = measureInterleaved(
    [
      { name: 'canonical', work: () => canonicalizeOutputs(outputs) },
      { name: 'wire', work: () => frameOutputs(outputs, encodings).bytes },
      { name: 'wire-one', work: () => frameOutputs(one, encodings).bytes },
    ],
    { warmups: 1, runs },
  ) as [Measurement<unknown>, Measurement<unknown>, Measurement<unknown>];
  return { canonical, wire, wireOne, oneCluster };
}
