/**
 * `npm run bench`: translates tier S and measures, in the same process and run, the floor of
 * turning its outputs into bytes (JSON.stringify, canonical JSON, protobuf wire frames).
 * Then the agent's file apply of a one-resource change against its full apply (agent-apply.ts).
 * Writes bench/RESULTS.md and prints the same text. Exits non-zero if any run's output is
 * wrong (a cluster missing, a translation problem, a changed output digest).
 */
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { MeshrelayError, sha256Hex, snapshotEncoding, type OutputSnapshot } from '@meshrelay/api';
import {
  DEFAULT_VIP_CIDR,
  allocateVips,
  createIstioValidator,
  translate,
  virtualDestinationKeys,
  type TranslationResult,
} from '@meshrelay/translator';
import { agentApplySection, measureAgentApply } from './agent-apply.ts';
import { runInterestBench } from './interest-scope.ts';
import { canonicalizeOutputs, checkWireRoundTrip, frameOutputs, stringifyOutputs } from './floor.ts';
import { deltaBytesSection } from './delta-bytes.ts';
import { measureInterleaved, type MeasureOptions, type Measurement, type Task } from './measure.ts';
import { describeMachine, renderResults, type Figure, type OutputSizes } from './report.ts';
import { writeResultsSection } from './results-file.ts';
import { runTier } from './tier/run-tier.ts';
import { tierS, type Workload } from './workload.ts';
import { runXdsBench } from './xds.ts';

/** V8 keeps optimising translate() for a dozen calls; warm-up rounds let the medians describe the steady state. */
const OPTIONS: MeasureOptions = { warmups: 10, runs: 31 };
const RESULTS_PATH = fileURLToPath(new URL('./RESULTS.md', import.meta.url));
/** Frames without compression: isolates protobufjs from gzip. */
const UNCOMPRESSED = { compressAboveBytes: Number.POSITIVE_INFINITY } as const;

function elapsedMs(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

function outputDigest(outputs: ReadonlyMap<string, OutputSnapshot>): string {
  return sha256Hex([...outputs.values()].map((o) => `${o.cluster} ${o.hash}`).join('\n'));
}

/** Throws unless every cluster got an output, nothing was reported, and (when given) the digest is the expected one. */
function checkTranslation(workload: Workload, result: TranslationResult, expectedDigest?: string): void {
  if (result.problems.length > 0) {
    const first = result.problems.slice(0, 5).map((p) => `${p.cluster ?? '-'} ${p.resource ?? '-'}: ${p.reason}`);
    throw new MeshrelayError(
      'MESHRELAY_ERR_TRANSLATION',
      `tier S translation reported ${result.problems.length} problems, e.g. ${first.join(' | ')}`,
    );
  }
  if (result.outputs.size !== workload.clusters.length) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_TRANSLATION',
      `tier S translation gave ${result.outputs.size} outputs for ${workload.clusters.length} clusters`,
    );
  }
  if (expectedDigest !== undefined && outputDigest(result.outputs) !== expectedDigest) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_TRANSLATION',
      'tier S translation gave different outputs in two runs of the same input',
    );
  }
}

function outputSizes(
  outputs: ReadonlyMap<string, OutputSnapshot>,
  encodings: ReadonlyMap<string, string>,
): OutputSizes {
  const resourcesByKind: Record<string, number> = {};
  let resources = 0;
  let canonicalBytes = 0;
  let stringifyBytes = 0;
  for (const output of outputs.values()) {
    resources += output.resources.length;
    canonicalBytes += output.bytes;
    stringifyBytes += Buffer.byteLength(JSON.stringify(output.resources));
    for (const r of output.resources) resourcesByKind[r.kind] = (resourcesByKind[r.kind] ?? 0) + 1;
  }
  const wire = frameOutputs(outputs, encodings);
  const raw = frameOutputs(outputs, encodings, UNCOMPRESSED);
  return {
    clusters: outputs.size,
    resources,
    resourcesByKind,
    canonicalBytes,
    stringifyBytes,
    wireBytes: wire.bytes,
    wireMessages: wire.messages,
    wireBytesUncompressed: raw.bytes,
    wireMessagesUncompressed: raw.messages,
    digest: outputDigest(outputs),
  };
}

interface FigureSpec {
  readonly label: string;
  readonly covers: string;
  readonly context?: boolean;
  readonly task: Task<unknown>;
}

/** A check that the same work on the same outputs produced the same size as a reference run. */
function sameAs(expected: number): (result: unknown) => void {
  return (result) => {
    if (result !== expected)
      throw new MeshrelayError(
        'MESHRELAY_ERR_INTERNAL',
        `an encoding of the same outputs changed size: ${String(result)} ≠ ${expected}`,
      );
  };
}

interface FigureContext {
  readonly workload: Workload;
  readonly translateOnce: () => TranslationResult;
  /** Output digest every translation must reproduce. */
  readonly digest: string;
  readonly outputs: ReadonlyMap<string, OutputSnapshot>;
  /** Canonical encoding of each output, by cluster (what the pull stream frames). */
  readonly encodings: ReadonlyMap<string, string>;
  readonly sizes: OutputSizes;
}

/** Translation first, then the floors it is compared with, each with a check of what it produced. */
function figureSpecs({ workload, translateOnce, digest, outputs, encodings, sizes }: FigureContext): FigureSpec[] {
  const inputs = [...workload.inputs.values()];
  const stringifyInputs = (): number => inputs.reduce((n, s) => n + JSON.stringify(s.resources).length, 0);
  return [
    {
      label: 'translation',
      covers:
        '`translate()`: input validation, VirtualDestination resolution, output building, Istio schema validation, canonical encoding and sha256 of every output',
      task: {
        name: 'translation',
        work: translateOnce,
        check: (r) => checkTranslation(workload, r as TranslationResult, digest),
      },
    },
    {
      label: 'JSON.stringify of its output',
      covers: '`JSON.stringify(output.resources)` per cluster',
      task: { name: 'json', work: () => stringifyOutputs(outputs), check: sameAs(stringifyOutputs(outputs)) },
    },
    {
      label: 'canonical JSON encoding of its output',
      covers: '`canonicalJson(output.resources)` per cluster (sorted keys; what the output hash covers)',
      task: {
        name: 'canonical',
        work: () => canonicalizeOutputs(outputs),
        check: sameAs(canonicalizeOutputs(outputs)),
      },
    },
    {
      label: 'wire framing of its output (gzip + protobufjs)',
      covers:
        "`encodeSnapshotFrames` (gzip above 64 KiB, 256 KiB chunks) of the canonical encoding + the Relay service's `PullResponse` serializer (protobufjs `encode(fromObject(…))`, as grpc-js calls it) for the header and every chunk",
      task: { name: 'wire', work: () => frameOutputs(outputs, encodings).bytes, check: sameAs(sizes.wireBytes) },
    },
    {
      label: 'protobufjs framing of its output (uncompressed)',
      covers: 'the same framing with compression off: `encodeSnapshotFrames` + `PullResponse` serialization only',
      task: {
        name: 'protobuf',
        work: () => frameOutputs(outputs, encodings, UNCOMPRESSED).bytes,
        check: sameAs(sizes.wireBytesUncompressed),
      },
    },
    {
      // Not a floor of the output: how long merely serializing what translation reads takes.
      label: 'JSON.stringify of its inputs',
      context: true,
      covers: `\`JSON.stringify(input.resources)\` per cluster (context, not a floor: the inputs are ${(workload.counts.inputBytes / sizes.canonicalBytes).toFixed(1)}× the outputs' bytes)`,
      task: { name: 'inputs', work: stringifyInputs, check: sameAs(stringifyInputs()) },
    },
  ];
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const machine = describeMachine();
  const benchStart = process.hrtime.bigint();

  const workloadStart = process.hrtime.bigint();
  const workload = tierS();
  const workloadMs = elapsedMs(workloadStart);
  console.error(
    `tier S: ${workload.counts.inputResources} input resources in ${workload.clusters.length} clusters (${workloadMs.toFixed(0)} ms)`,
  );

  // Set-up an operator pays once per process or per allocation, not per translation.
  const validator = createIstioValidator();
  const vips = allocateVips(new Map(), virtualDestinationKeys(workload.inputs), DEFAULT_VIP_CIDR);
  const input = { inputs: workload.inputs, clusters: workload.clusters, vips };

  const coldStart = process.hrtime.bigint();
  const cold = translate(input, validator);
  const coldTranslationMs = elapsedMs(coldStart);
  checkTranslation(workload, cold);
  // Every timed translation must give these outputs; the floors encode them.
  const digest = outputDigest(cold.outputs);

  const outputs = cold.outputs;
  const encodings = new Map([...outputs].map(([cluster, o]) => [cluster, snapshotEncoding(o)]));
  for (const output of outputs.values()) await checkWireRoundTrip(output, encodings.get(output.cluster) as string);
  const sizes = outputSizes(outputs, encodings);
  const specs = figureSpecs({
    workload,
    translateOnce: () => translate(input, validator),
    digest,
    outputs,
    encodings,
    sizes,
  });
  const measurements = measureInterleaved(
    specs.map((f) => f.task),
    OPTIONS,
  );
  const [translation, ...floors] = specs.map((f, i): Figure => ({
    label: f.label,
    covers: f.covers,
    context: f.context,
    measurement: measurements[i] as Measurement<unknown>,
  }));

  const text = renderResults({
    startedAt,
    totalSeconds: elapsedMs(benchStart) / 1000,
    machine,
    loadAverage1mAtEnd: loadavg()[0] ?? 0,
    tier: 'S',
    shape: workload.shape,
    counts: workload.counts,
    options: OPTIONS,
    workloadMs,
    coldTranslationMs,
    translation: translation as Figure,
    floors,
    outputs: sizes,
  });
  const report = `${text}\n\n${await deltaBytesSection()}`;
  writeResultsSection(RESULTS_PATH, 'in-process', report);
  console.log(report);
  // The agent's apply: a one-resource change against the full apply of the same output, same run.
  const agentApply = agentApplySection(await measureAgentApply());
  writeResultsSection(RESULTS_PATH, 'agent-apply', agentApply);
  console.log(`\n${agentApply}`);
  console.error(`wrote ${RESULTS_PATH}`);
}

// With flags (`npm run bench -- --tier S|M|L …`) it is the tier bench with real processes; `--xds …` the
// agent's ADS server (bench/xds.ts); `--interest …` interest-scoped outputs (bench/interest-scope.ts); without,
// the in-process figures.
if (process.argv[2] === '--xds') await runXdsBench(process.argv.slice(3), RESULTS_PATH);
else if (process.argv[2] === '--interest') await runInterestBench(process.argv.slice(3), RESULTS_PATH);
else if (process.argv.length > 2) await runTier(process.argv.slice(2));
else await main();
