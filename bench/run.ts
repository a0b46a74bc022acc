/**
 * `npm run bench`: translates tier S and measures, in the same process and run, the floor of
 * turning its outputs into bytes (JSON.stringify, canonical JSON, protobuf wire frames).
 * Writes bench/RESULTS.md and prints the same text. Exits non-zero if any run's output is
 * wrong (a cluster missing, a translation problem, a changed output digest).
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { MeshrelayError, sha256Hex, snapshotEncoding, type OutputSnapshot } from '@meshrelay/api';
import { DEFAULT_VIP_CIDR, allocateVips, createIstioValidator, translate, virtualDestinationKeys, type TranslationResult } from '@meshrelay/translator';
import { canonicalizeOutputs, checkWireRoundTrip, frameOutputs, stringifyOutputs } from './floor.ts';
import { measure, type MeasureOptions } from './measure.ts';
import { describeMachine, renderResults, type Figure, type OutputSizes } from './report.ts';
import { tierS, type Workload } from './workload.ts';

/** V8 keeps optimising translate() for a dozen calls; warm-ups let the medians describe the steady state. */
const OPTIONS: MeasureOptions = { warmups: 10, runs: 21 };
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
    throw new MeshrelayError('MESHRELAY_ERR_TRANSLATION', `tier S translation reported ${result.problems.length} problems, e.g. ${first.join(' | ')}`);
  }
  if (result.outputs.size !== workload.clusters.length) {
    throw new MeshrelayError('MESHRELAY_ERR_TRANSLATION', `tier S translation gave ${result.outputs.size} outputs for ${workload.clusters.length} clusters`);
  }
  if (expectedDigest !== undefined && outputDigest(result.outputs) !== expectedDigest) {
    throw new MeshrelayError('MESHRELAY_ERR_TRANSLATION', 'tier S translation gave different outputs in two runs of the same input');
  }
}

function outputSizes(outputs: ReadonlyMap<string, OutputSnapshot>, encodings: ReadonlyMap<string, string>): OutputSizes {
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

function main(): void {
  const startedAt = new Date();
  const machine = describeMachine();
  const benchStart = process.hrtime.bigint();

  const workloadStart = process.hrtime.bigint();
  const workload = tierS();
  const workloadMs = elapsedMs(workloadStart);
  console.error(`tier S: ${workload.counts.inputResources} input resources in ${workload.clusters.length} clusters (${workloadMs.toFixed(0)} ms)`);

  // Set-up an operator pays once per process or per allocation, not per translation.
  const validator = createIstioValidator();
  const vips = allocateVips(new Map(), virtualDestinationKeys(workload.inputs), DEFAULT_VIP_CIDR);
  const input = { inputs: workload.inputs, clusters: workload.clusters, vips };

  const coldStart = process.hrtime.bigint();
  const cold = translate(input, validator);
  const coldTranslationMs = elapsedMs(coldStart);
  checkTranslation(workload, cold);
  const digest = outputDigest(cold.outputs);

  const translation = measure('translation', OPTIONS, () => translate(input, validator), (r) => checkTranslation(workload, r, digest));
  const outputs = translation.result.outputs;
  console.error(`translation: median ${translation.medianMs.toFixed(2)} ms`);

  const encodings = new Map([...outputs].map(([cluster, o]) => [cluster, snapshotEncoding(o)]));
  for (const output of outputs.values()) checkWireRoundTrip(output, encodings.get(output.cluster) as string);
  const sizes = outputSizes(outputs, encodings);
  const expectLength = (expected: number) => (length: number) => {
    if (length !== expected) throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `an encoding of the same outputs changed length: ${length} ≠ ${expected}`);
  };
  const expectWire = (expected: number) => (size: { bytes: number }) => expectLength(expected)(size.bytes);
  const stringifyLength = stringifyOutputs(outputs);
  const canonicalLength = canonicalizeOutputs(outputs);

  const inputs = [...workload.inputs.values()];
  const inputLength = inputs.reduce((n, s) => n + JSON.stringify(s.resources).length, 0);
  const floors: Figure[] = [
    {
      label: 'JSON.stringify of its output',
      covers: '`JSON.stringify(output.resources)` per cluster',
      measurement: measure('json', OPTIONS, () => stringifyOutputs(outputs), expectLength(stringifyLength)),
    },
    {
      label: 'canonical JSON encoding of its output',
      covers: '`canonicalJson(output.resources)` per cluster (sorted keys; what the output hash covers)',
      measurement: measure('canonical', OPTIONS, () => canonicalizeOutputs(outputs), expectLength(canonicalLength)),
    },
    {
      label: 'wire framing of its output (gzip + protobufjs)',
      covers: '`encodeSnapshotFrames` (gzip above 64 KiB, 256 KiB chunks) of the canonical encoding + `PullResponse` serialization of the header and every chunk',
      measurement: measure('wire', OPTIONS, () => frameOutputs(outputs, encodings), expectWire(sizes.wireBytes)),
    },
    {
      label: 'protobufjs framing of its output (uncompressed)',
      covers: 'the same framing with compression off: `encodeSnapshotFrames` + `PullResponse` serialization only',
      measurement: measure('protobuf', OPTIONS, () => frameOutputs(outputs, encodings, UNCOMPRESSED), expectWire(sizes.wireBytesUncompressed)),
    },
    {
      // Not a floor of the output: how long merely serializing what translation reads takes.
      label: 'JSON.stringify of its inputs',
      covers: `\`JSON.stringify(input.resources)\` per cluster (context, not a floor: the inputs are ${(workload.counts.inputBytes / sizes.canonicalBytes).toFixed(1)}× the outputs' bytes)`,
      measurement: measure('inputs', OPTIONS, () => inputs.reduce((n, s) => n + JSON.stringify(s.resources).length, 0), expectLength(inputLength)),
    },
  ];

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
    translation: { label: 'translation', covers: '`translate()`: input validation, VirtualDestination resolution, output building, Istio schema validation, canonical encoding and sha256 of every output', measurement: translation },
    floors,
    outputs: sizes,
  });
  writeFileSync(RESULTS_PATH, `${text}\n`);
  console.log(text);
  console.error(`wrote ${RESULTS_PATH}`);
}

main();
