import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { isRecord } from '@meshrelay/api';
import {
  startFakeKubeApiServer,
  type FakeKubeApiServer,
  type FakeKubeApiServerOptions,
  type FakeKubeObject,
  type FakeKubeRequest,
} from '@meshrelay/testkit';
import { listManifestFiles } from '../../src/discovery/manifest-reader.ts';

export const EXAMPLES_CLUSTER_A = fileURLToPath(new URL('../../../../examples/cluster-a', import.meta.url));

/** The fake API server (a test double; see packages/testkit) and a client config for it, stopped after the test. */
export async function startFakeKube(
  t: TestContext,
  options: FakeKubeApiServerOptions = {},
): Promise<{ server: FakeKubeApiServer; kubeConfig: KubeConfig }> {
  const server = await startFakeKubeApiServer(options);
  t.after(() => server.stop());
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions(server.kubeConfigOptions());
  return { server, kubeConfig };
}

/**
 * Every document of every manifest in `dir`, as objects: the files the file provider reads, chosen
 * by its own listing (YAML/JSON names, dot-entries such as a status directory skipped).
 */
export async function manifestObjects(dir: string): Promise<FakeKubeObject[]> {
  const objects: FakeKubeObject[] = [];
  for (const file of await listManifestFiles(dir)) {
    for (const doc of parseAllDocuments(await readFile(path.join(dir, file), 'utf8'))) {
      const value: unknown = doc.toJS();
      if (isRecord(value)) objects.push(value as FakeKubeObject);
    }
  }
  return objects;
}

export function service(
  name: string,
  port = 9080,
  namespace = 'bookinfo',
  labels: Record<string, string> = {},
): FakeKubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace, labels: { app: name, ...labels } },
    spec: { selector: { app: name }, ports: [{ name: 'http', port, protocol: 'TCP' }] },
  };
}

export function pod(name: string, nodeName: string, ip: string, namespace = 'bookinfo'): FakeKubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { app: 'reviews' } },
    spec: { serviceAccountName: 'bookinfo-reviews', nodeName, containers: [{ name: 'app', image: 'reviews:1' }] },
    status: { phase: 'Running', podIP: ip, podIPs: [{ ip }], conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

export const isWatch = (r: FakeKubeRequest): boolean => r.method === 'GET' && r.query['watch'] === 'true';
export const isList = (r: FakeKubeRequest): boolean => r.method === 'GET' && r.query['watch'] !== 'true';
