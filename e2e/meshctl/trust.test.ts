/**
 * meshctl trust status / rotate against a real management server with a RootTrustPolicy file:
 * a rotation starts, a silent cluster is shown holding it, and a second rotation is refused.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { meshctlAt, startServer } from './harness.ts';

const POLICY = `apiVersion: admin.gloo.solo.io/v2
kind: RootTrustPolicy
metadata: { name: root, namespace: gloo-mesh }
spec:
  config:
    mgmtServerCa: { generated: { rsaKeySizeBytes: 2048 } }
`;

function policyFile(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'meshctl-trust-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'policy.yaml'), POLICY);
  return join(dir, 'policy.yaml');
}

test(
  'given a generated root and a silent cluster, when trust rotate and trust status run, then the rotation is shown held by it',
  { timeout: 120_000 },
  async (t) => {
    const { server, url } = await startServer(t, ['--root-trust-policy', policyFile(t), '--trust-tick', '100ms']);
    await server.registry.register('west', {});

    const before = await meshctlAt(url, ['trust', 'status']);
    assert.equal(before.code, 0, before.stderr);
    assert.match(before.stdout, /^Mesh trust from RootTrustPolicy gloo-mesh\/root \(generated root\)\.\n/);
    assert.match(before.stdout, /Phase 0 \(steady\), generation 1, since /);

    const rotated = await meshctlAt(url, ['trust', 'rotate']);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /^Rotation started to root [0-9a-f]{16}\.\n/);

    const status = await meshctlAt(url, ['trust', 'status']);
    assert.equal(status.code, 0, status.stderr);
    const lines = status.stdout.split('\n');
    assert.match(
      lines[1] ?? '',
      /^Phase 1 \(new root added to every bundle\), generation 2, since \S+ \(for \d+s\)\.$/,
    );
    assert.match(lines[2] ?? '', /^Held: cluster west has not reported, since \S+ \(for \d+s\)\.$/);
    assert.match(
      status.stdout,
      /\nROOT {3,}ORIGIN {3,}EXPIRES {3,}ROLE\n[0-9a-f]{16} {3}generated .* signs, in bundles\n[0-9a-f]{16} {3}generated .* in bundles\n/,
    );
    assert.match(status.stdout, /\nCLUSTER {3}PHASE {3}APPLIED .*\nwest {6}- {7}0 .* never\n/);

    const again = await meshctlAt(url, ['trust', 'rotate']);
    assert.equal(again.code, 1);
    assert.match(
      again.stderr,
      /MESHRELAY_ERR_ROTATION_IN_PROGRESS: a root rotation is under way \(phase 1, generation 2\)/,
    );

    const json = await meshctlAt(url, ['-o', 'json', 'trust', 'status']);
    assert.equal((JSON.parse(json.stdout) as { phase: number }).phase, 1);
  },
);
