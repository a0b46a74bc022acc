/**
 * The floor figures: the cheapest ways to turn the translator's outputs into bytes. Each
 * function does the work for every cluster's output and returns a size, so the caller can
 * keep the result (and the work cannot be optimised away).
 */
import {
  MeshrelayError,
  RELAY_SERVICE,
  SnapshotAssembler,
  canonicalJson,
  encodeSnapshotFramesSync,
  relay,
  type FrameOptions,
  type OutputSnapshot,
} from '@meshrelay/api';

type Outputs = ReadonlyMap<string, OutputSnapshot>;

/** Total UTF-16 length of `JSON.stringify(resources)` over all outputs. */
export function stringifyOutputs(outputs: Outputs): number {
  let length = 0;
  for (const output of outputs.values()) length += JSON.stringify(output.resources).length;
  return length;
}

/** Total UTF-16 length of the canonical encoding (sorted keys: what output hashes cover) over all outputs. */
export function canonicalizeOutputs(outputs: Outputs): number {
  let length = 0;
  for (const output of outputs.values()) length += canonicalJson(output.resources).length;
  return length;
}

export interface WireSize {
  /** Serialized PullResponse messages (header + chunks) over all outputs, in bytes. */
  readonly bytes: number;
  readonly messages: number;
}

/**
 * Frames every output as the pull stream sends it: encodeSnapshotFramesSync on the output's
 * canonical encoding (`encodings`, computed by the caller), then each header and chunk through
 * the Relay service's PullResponse serializer (protobufjs fromObject + encode, as grpc-js calls it).
 */
export function frameOutputs(
  outputs: Outputs,
  encodings: ReadonlyMap<string, string>,
  options: FrameOptions = {},
): WireSize {
  const serialize = RELAY_SERVICE.pull.responseSerialize;
  let bytes = 0;
  let messages = 0;
  for (const [cluster, output] of outputs) {
    const encoding = encodings.get(cluster);
    if (encoding === undefined)
      throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `no canonical encoding for the output of ${cluster}`);
    const frames = encodeSnapshotFramesSync({ hash: output.hash, encoding, provenance: output.provenance }, options);
    bytes += serialize({ header: frames.header }).length;
    messages++;
    for (const chunk of frames.chunks) {
      bytes += serialize({ chunk }).length;
      messages++;
    }
  }
  return { bytes, messages };
}

/**
 * Decodes the frames of one output the way an agent does and throws unless they reassemble to
 * the output's hash: proves the wire figure measures a faithful encoding. Not timed.
 */
export async function checkWireRoundTrip(
  output: OutputSnapshot,
  encoding: string,
  options: FrameOptions = {},
): Promise<void> {
  const serialize = RELAY_SERVICE.pull.responseSerialize;
  const frames = encodeSnapshotFramesSync({ hash: output.hash, encoding, provenance: output.provenance }, options);
  const header = relay.v1.PullResponse.decode(serialize({ header: frames.header })).header;
  if (!header)
    throw new MeshrelayError(
      'MESHRELAY_ERR_INTERNAL',
      `${output.cluster}: the serialized header frame decodes to no header`,
    );
  const assembler = new SnapshotAssembler(header, { maxBytes: 1 << 30, maxResources: 1_000_000 });
  let complete = false;
  for (const chunk of frames.chunks) {
    const decoded = relay.v1.PullResponse.decode(serialize({ chunk })).chunk;
    if (!decoded)
      throw new MeshrelayError(
        'MESHRELAY_ERR_INTERNAL',
        `${output.cluster}: a serialized chunk frame decodes to no chunk`,
      );
    complete = assembler.add(decoded);
  }
  if (!complete)
    throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `${output.cluster}: the frames do not complete the snapshot`);
  const assembled = await assembler.finish();
  if (assembled.hash !== output.hash || assembled.resources.length !== output.resources.length) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INTERNAL',
      `${output.cluster}: the wire round trip gives hash ${assembled.hash}, expected ${output.hash}`,
    );
  }
}
