export {
  canonicalConcat,
  canonicalJson,
  canonicalObjectEncodeCount,
  canonicalPart,
  canonicalPieces,
  concatParts,
  deepFreeze,
  isCanonicalPart,
  isStringifiable,
} from './canonical.ts';
export {
  ERROR_CATALOGUE,
  GRPC_STATUS,
  MeshrelayError,
  isErrorCode,
  toMeshrelayError,
  type ErrorCode,
} from './errors.ts';
export {
  compareResources,
  formatResourceKey,
  isRecord,
  resourceId,
  resourceKey,
  type ObjectMeta,
  type Resource,
  type ResourceKey,
} from './resource.ts';
export {
  INPUT_KINDS,
  KINDS,
  MESH_CONFIG_NAMESPACE,
  OWNER_LABEL,
  OWNER_LABEL_VALUE,
  SOURCES_ANNOTATION,
  defaultPluralOf,
  findInputKind,
  isKind,
  isMeshConfigMap,
  type KindRef,
} from './kinds.ts';
export {
  buildInputSnapshot,
  buildOutputSnapshot,
  canonicalEncodingCount,
  canonicalResource,
  unencodedCanonicalResource,
  encodeResources,
  isCanonicalResource,
  resourceEncoding,
  resourceEncodingPieces,
  sha256Hex,
  snapshotEncoding,
  withProvenance,
  type EncodedResources,
  type InputSnapshot,
  type InputSnapshotInit,
  type OutputSnapshot,
  type OutputSnapshotInit,
  type Provenance,
  copyProvenance,
} from './snapshot.ts';
export {
  DEFAULT_CHUNK_BYTES,
  DEFAULT_COMPRESS_ABOVE_BYTES,
  MAX_RESOURCE_DEPTH,
  MIN_CHUNK_BYTES,
  SnapshotAssembler,
  encodeSnapshotFrames,
  encodeSnapshotFramesSync,
  snapshotWireBytes,
  type AssembledSnapshot,
  type AssemblyLimits,
  type FrameInput,
  type FrameOptions,
  type SnapshotFrames,
} from './wire.ts';
export {
  applyDelta,
  canonicalParts,
  computeDelta,
  DELTA_COMPRESS_ABOVE_BYTES,
  deltaInput,
  encodeSnapshotFor,
  MAX_HEADER_PATCH_BYTES,
  rememberReceivedEncodings,
  resolveDelta,
  type ChosenFrames,
  type DeltaLimits,
  type HeldResources,
  type ResourceDelta,
  type SendOptions,
} from './delta.ts';
export { applyResourcePatch, resourcePatch, resourcePatchOps, type ResourcePatch } from './resource-patch.ts';
export { DEFAULT_PATCH_LIMITS, patchLimits, type PatchLimits } from './patch-budget.ts';
export { applyProvenanceChange, provenanceChange, provenanceHash, type ProvenanceChange } from './provenance-delta.ts';
export { deltaBytes, deltaOfHeader, type DeltaHeader } from './delta-header.ts';
export { OutboundWriter, relayMessageBytes, type WritableCall } from './outbound-writer.ts';
export {
  CLUSTER_WARM_CONDITION,
  DEFAULT_MANAGEMENT_NAMESPACE,
  DNS_LABEL,
  DNS_NAME_MAX_LENGTH,
  DNS_NAME_PATTERN,
  DNS_SUBDOMAIN,
  clusterSpiffeId,
  clusterWarmCondition,
  isClusterWarm,
  isDnsName,
  isValidClusterName,
  type ClusterCondition,
  type KubernetesCluster,
} from './cluster.ts';
export { normalizeResource } from './normalize.ts';
export { relay } from './gen/relay.js';
export { REGISTRATION_SERVICE, RELAY_SERVICE } from './grpc.ts';
export { durationForms, parseByteSize, parseDuration, type BareDurationUnit, type Parsed } from './units.ts';
export {
  Backoff,
  DEFAULT_BACKOFF_BASE_MS,
  DEFAULT_BACKOFF_CAP_MS,
  fullJitter,
  type BackoffOptions,
  type Clock,
  type RandomSource,
} from './backoff.ts';
export { StreamHeartbeat, type StreamHeartbeatOptions } from './stream-heartbeat.ts';
export { LoopSlicer, SLICE_BUDGET_MS } from './loop-slicer.ts';
export { parseResourceArray, parseWithResourcesLast, type ResourceArrayLimits } from './resource-array-parser.ts';
export {
  adoptCanonicalInputSnapshot,
  buildInputSnapshotInSlices,
  buildOutputSnapshotInSlices,
  encodeResourcesInSlices,
  jsonArrayInSlices,
  prettyJsonArrayInSlices,
  sha256InSlices,
  utf8InSlices,
  type SlicedEncoding,
} from './sliced-encoding.ts';
export { adoptCanonicalTexts } from './received-canonical.ts';
export { carryCheckpoints } from './resumable-digest.ts';
