// Helpers for tests of the `kubernetes` registry backend against the fake kube-apiserver
// (a test double from @meshrelay/testkit: no real API server can run on the build machines).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { startFakeKubeApiServer, type FakeKubeApiServer, type FakeKubeApiServerOptions } from '@meshrelay/testkit';
import type { ClusterRegistry, RegistryChange } from '../src/cluster-registry.ts';
import { createKubernetesClusterRegistry, type KubernetesRegistryOptions } from '../src/kubernetes-cluster-registry.ts';

export const NS = 'gloo-mesh';

export async function startFakeKube(
  t: TestContext,
  options: FakeKubeApiServerOptions = {},
): Promise<FakeKubeApiServer> {
  const fake = await startFakeKubeApiServer(options);
  t.after(() => fake.stop());
  return fake;
}

export function kubeConfigOf(fake: FakeKubeApiServer): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions(fake.kubeConfigOptions());
  return kc;
}

/** Writes the fake's kubeconfig to a temp file (for `--kubeconfig`). */
export function kubeConfigFile(t: TestContext, fake: FakeKubeApiServer): string {
  const dir = mkdtempSync(join(tmpdir(), 'meshrelay-kubeconfig-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'config');
  writeFileSync(file, fake.kubeConfigYaml(), { mode: 0o600 });
  return file;
}

export async function startKubeRegistry(
  t: TestContext,
  fake: FakeKubeApiServer,
  options: Partial<KubernetesRegistryOptions> = {},
): Promise<ClusterRegistry> {
  const registry = await createKubernetesClusterRegistry({
    kubeConfig: kubeConfigOf(fake),
    namespace: NS,
    tokenTtlSeconds: 3600,
    tokenOverlapSeconds: 60,
    logger: pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' }),
    retryBaseMs: 20,
    retryMaxMs: 200,
    ...options,
  });
  t.after(() => registry.close());
  return registry;
}

/** Records every change a registry reports. */
export function recordChanges(registry: ClusterRegistry): RegistryChange[] {
  const changes: RegistryChange[] = [];
  registry.onChange((change) => changes.push(change));
  return changes;
}

/** A KubernetesCluster CR as an operator would apply it (no status). */
export function clusterCr(
  name: string,
  spec: Record<string, unknown> = {},
): { apiVersion: string; kind: string; metadata: { name: string; namespace: string }; spec: Record<string, unknown> } {
  return { apiVersion: 'admin.gloo.solo.io/v2', kind: 'KubernetesCluster', metadata: { name, namespace: NS }, spec };
}

export interface WarmCondition {
  type?: string;
  status?: string;
  reason?: string;
}

/** The ClusterWarm condition of a CR as stored by the fake API server. */
export function storedWarmCondition(fake: FakeKubeApiServer, name: string): WarmCondition | undefined {
  const status = fake.get('KubernetesCluster', name, NS)?.['status'] as { conditions?: WarmCondition[] } | undefined;
  return status?.conditions?.find((c) => c.type === 'ClusterWarm');
}
