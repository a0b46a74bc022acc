import type { Logger } from 'pino';
import type { ClusterRegistry } from '@meshrelay/registry';
import type { DurableState } from '../durable-state.ts';
import type { ManagementResources } from '../management-resources.ts';
import { MeshRoots } from './mesh-roots.ts';
import { MeshTrustService } from './mesh-trust-service.ts';
import { TrustRecords } from './trust-records.ts';

export interface OpenMeshTrustOptions {
  readonly durable: Pick<DurableState, 'documents' | 'meshRootStore' | 'readRootSecret' | 'writeRootTrustPolicyStatus'>;
  readonly management: Pick<ManagementResources, 'rootTrustPolicy'>;
  readonly registry: Pick<ClusterRegistry, 'list'>;
  readonly tickMs: number;
  /** The policy is a CR (not --root-trust-policy): its status is written there. */
  readonly policyIsCr: boolean;
  readonly logger: Logger;
  readonly now: () => Date;
}

/**
 * Builds the mesh trust from the durable state and runs its first tick: with a RootTrustPolicy in
 * force the mesh root exists (made or adopted) when this resolves. A failing tick is logged and
 * retried on the next one; it never stops the server.
 */
export async function openMeshTrust(options: OpenMeshTrustOptions): Promise<MeshTrustService> {
  const { durable } = options;
  const service = new MeshTrustService({
    records: new TrustRecords(durable.documents('mesh-trust')),
    roots: new MeshRoots((index) => durable.meshRootStore(index)),
    ...(durable.readRootSecret ? { readRootSecret: durable.readRootSecret } : {}),
    ...(durable.writeRootTrustPolicyStatus && options.policyIsCr
      ? { writePolicyStatus: durable.writeRootTrustPolicyStatus }
      : {}),
    policy: () => options.management.rootTrustPolicy(),
    registry: options.registry,
    logger: options.logger,
    now: options.now,
    tickMs: options.tickMs,
  });
  await service.start();
  return service;
}
