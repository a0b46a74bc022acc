import type { Logger } from 'pino';
import type { CaBundle } from '@meshrelay/certs';
import type { PatchLimits } from '@meshrelay/api';
import type { BlastRadiusConfig } from '../blast-radius.ts';
import type { CarriedContributions } from '../carried-contributions.ts';
import type { HeldOutputs } from '../held-outputs.ts';
import type { SnapshotStore } from '@meshrelay/store';
import type { ConnectionTracker } from '../connections.ts';
import type { InputIntake } from '../input-intake.ts';
import type { RelayMetrics } from '../metrics.ts';
import type { OutputHub } from '../output-hub.ts';
import type { ClusterRegistry } from '@meshrelay/registry';
import type { ResourceStatusSource } from './status-feed.ts';
import type { DataPlaneReports } from '../data-plane-reports.ts';
import type { InterestLeases } from '../interests/interest-leases.ts';
import type { StreamAdmission } from './stream-admission.ts';

export interface RelayLimits {
  readonly maxSnapshotBytes: number;
  readonly maxResources: number;
  /** What an input delta's RFC 6902 patches may cost (--max-delta-patch-ops and friends). */
  readonly patch: PatchLimits;
  readonly heartbeatIntervalMs: number;
  readonly heartbeatTimeoutMs: number;
  readonly chunkBytes: number;
  /** Most time from a snapshot header to its last chunk. */
  readonly snapshotTransferTimeoutMs: number;
}

/** What the relay handlers share; built once by the composition root. */
export interface RelayContext {
  readonly ca: CaBundle;
  readonly trustDomain: string;
  readonly clientCertLifetimeSeconds: number;
  readonly registry: ClusterRegistry;
  readonly store: SnapshotStore;
  readonly intake: InputIntake;
  readonly outputs: OutputHub;
  readonly held: HeldOutputs;
  readonly blastRadius: BlastRadiusConfig;
  /** Absent clusters' carried contributions; a released one may be removed from outputs. */
  readonly contributions: CarriedContributions;
  readonly connections: ConnectionTracker;
  /** Paces new agent sessions (reconnect storms); every stream is admitted when absent. */
  readonly admission?: StreamAdmission;
  readonly metrics: RelayMetrics;
  readonly limits: RelayLimits;
  readonly logger: Logger;
  readonly now: () => Date;
  /** Called after an input snapshot changed, so translation runs. */
  readonly onInputChanged: (cluster: string) => void;
  /** Resource statuses for agents (sent on their Pull streams); none are sent when absent. */
  readonly resourceStatuses?: ResourceStatusSource;
  /** Where agents' data-plane reports go (see DataPlaneReports); absent, they are ignored. */
  readonly dataPlane?: DataPlaneReports;
  /** Where agents' interest reports renew leases (DESIGN §17); absent, they are ignored. */
  readonly interests?: InterestLeases;
}

/** A gRPC status for a stream or unary error, with the catalogue code leading the message. */
export function grpcStatusError(code: number, message: string): Error & { code: number; details: string } {
  return Object.assign(new Error(message), { code, details: message });
}
