import path from 'node:path';
import type { Client } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { Resource } from '@meshrelay/api';
import type { Registry } from 'prom-client';
import type { AgentConfig } from '../config.ts';
import { kubeSupport } from '../kube/kube-modules.ts';
import { callMeshTrust } from '../relay/relay-rpc.ts';
import type { CacertsStore } from './cacerts.ts';
import { DirectoryCacertsStore, SecretCacertsStore } from './cacerts-stores.ts';
import { MeshTrustClient } from './mesh-trust-client.ts';
import { createTrustMetrics } from './trust-metrics.ts';
import { WorkloadCertFiles } from './workload-cert-files.ts';
import { WorkloadIssuer } from './workload-issuer.ts';

const DEFAULT_TRUST_INTERVAL_MS = 30_000;
const DEFAULT_WORKLOAD_CERT_TTL_MS = 86_400_000;

export interface MeshTrustDeps {
  /** The relay's open mTLS channel, or undefined while none is open. */
  readonly channel: () => Client | undefined;
  readonly discovered: () => readonly Resource[] | undefined;
  readonly registry: Registry;
  readonly logger: Logger;
  /** Deadline of each MeshTrust call (default 30 s: a 4096-bit CSR is checked and signed within it). */
  readonly rpcTimeoutMs?: number;
  /** See MeshTrustClientOptions.onStep. */
  readonly onStep?: () => void;
}

/**
 * Where `cacerts` goes: `--cacerts-dir` when given; else the Secret `cacerts` in `--istio-namespace` when outputs
 * are applied to Kubernetes; else `<state-dir>/cacerts`.
 */
export function cacertsStoreFor(config: AgentConfig): CacertsStore {
  if (config.cacertsDir === undefined && config.apply === 'kubernetes') {
    const kubeConfig = kubeSupport().loadKubeConfig({
      ...(config.kubeconfig !== undefined ? { kubeconfig: config.kubeconfig } : {}),
      ...(config.kubeContext !== undefined ? { context: config.kubeContext } : {}),
    });
    return new SecretCacertsStore({ kubeConfig, namespace: config.istioNamespace ?? 'istio-system' });
  }
  return new DirectoryCacertsStore(config.cacertsDir ?? path.join(config.stateDir, 'cacerts'));
}

/** The mesh trust client an agent config asks for, or undefined with `--trust-interval 0`. */
export function createMeshTrust(config: AgentConfig, deps: MeshTrustDeps): MeshTrustClient | undefined {
  const intervalMs = config.trustIntervalMs ?? DEFAULT_TRUST_INTERVAL_MS;
  if (intervalMs === 0) return undefined;
  const files = new WorkloadCertFiles(config.workloadCertDir ?? path.join(config.stateDir, 'workload-certs'));
  const timeoutMs = deps.rpcTimeoutMs ?? 30_000;
  return new MeshTrustClient({
    cluster: config.cluster,
    store: cacertsStoreFor(config),
    issuer: new WorkloadIssuer({
      files,
      ttlSeconds: (config.workloadCertTtlMs ?? DEFAULT_WORKLOAD_CERT_TTL_MS) / 1000,
      logger: deps.logger,
    }),
    call: (request) => {
      const channel = deps.channel();
      return channel === undefined ? undefined : callMeshTrust(channel, request, timeoutMs);
    },
    discovered: deps.discovered,
    intervalMs,
    logger: deps.logger,
    metrics: createTrustMetrics(deps.registry),
    ...(deps.onStep ? { onStep: deps.onStep } : {}),
  });
}
