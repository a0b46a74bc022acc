// Helpers for the mesh trust tests: a RootTrustPolicy file, servers on a given state directory
// (replicas, restarts), and Relay.MeshTrust calls over the real mTLS relay.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { Client, ServiceError } from '@grpc/grpc-js';
import { pino } from 'pino';
import { RELAY_SERVICE, type relay } from '@meshrelay/api';
import { createIntermediateCsr } from '@meshrelay/certs';
import { parseServerConfig } from '../src/config.ts';
import { startManagementServer } from '../src/server.ts';
import { bearer, type TestServer } from './harness.ts';
import type { TrustStatus } from '../src/mesh-trust/trust-status.ts';

/** A RootTrustPolicy with a generated root; 2048-bit keys keep the tests quick. */
export const GENERATED_POLICY = `apiVersion: admin.gloo.solo.io/v2
kind: RootTrustPolicy
metadata:
  name: root
  namespace: gloo-mesh
spec:
  config:
    mgmtServerCa:
      generated:
        rsaKeySizeBytes: 2048
        ttlDays: 30
    intermediateCertOptions:
      ttlDays: 7
      rsaKeySizeBytes: 2048
      orgName: acme
      secretRotationGracePeriodRatio: 0.2
`;

export function tempDir(t: TestContext, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function policyFile(t: TestContext, text = GENERATED_POLICY): string {
  const path = join(tempDir(t, 'meshrelay-rtp-'), 'root-trust-policy.yaml');
  writeFileSync(path, text);
  return path;
}

/** A management server on `stateDir` (stopped by the caller or, at the latest, after the test). */
export async function startServerOn(
  t: TestContext,
  stateDir: string,
  replica: string,
  flags: string[],
): Promise<TestServer> {
  const config = parseServerConfig([
    ...['--relay-host', '127.0.0.1', '--relay-port', '0', '--http-host', '127.0.0.1', '--http-port', '0'],
    ...['--metrics-port', '0', '--state-dir', stateDir, '--safe-start-window', '0', '--replica-name', replica],
    ...flags,
  ]);
  const server = await startManagementServer(config, pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' }));
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= server.stop());
  t.after(stop);
  return { ...server, stop, stateDir, api: `http://127.0.0.1:${server.httpPort}` };
}

export function meshTrust(client: Client, request: relay.v1.IMeshTrustRequest): Promise<relay.v1.MeshTrustResponse> {
  const m = RELAY_SERVICE.meshTrust;
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      request,
      (err: ServiceError | null, res?: relay.v1.IMeshTrustResponse) =>
        err ? reject(err) : resolve(res as relay.v1.MeshTrustResponse),
    );
  });
}

/** A CSR for `cluster`'s intermediate with a 2048-bit key. */
export function intermediateCsr(cluster: string, trustDomain = 'cluster.local'): Promise<{ csrPem: string }> {
  return createIntermediateCsr({ cluster, trustDomain, rsaKeyBits: 2048 });
}

export async function trustStatusOf(server: TestServer): Promise<TrustStatus> {
  const res = await fetch(`${server.api}/api/v1/trust`, { headers: bearer(server) });
  if (!res.ok) throw new Error(`GET /api/v1/trust: ${res.status} ${await res.text()}`);
  return (await res.json()) as TrustStatus;
}

export async function rotate(server: TestServer): Promise<Response> {
  return fetch(`${server.api}/api/v1/trust/rotate`, { method: 'POST', headers: bearer(server) });
}
