/** The mesh trust's configuration: a RootTrustPolicy file is checked at start, naming the bad field. */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseServerConfig } from '../src/config.ts';
import { loadRootTrustPolicyFile } from '../src/management-resources.ts';
import { GENERATED_POLICY, tempDir } from './mesh-trust-harness.ts';

test('given a valid policy file, when it is read, then the policy is the one in force', (t) => {
  const file = join(tempDir(t, 'meshrelay-rtp-'), 'p.yaml');
  writeFileSync(file, GENERATED_POLICY);
  const policy = loadRootTrustPolicyFile(file);
  assert.equal(`${policy.namespace}/${policy.name}`, 'gloo-mesh/root');
  assert.deepEqual(policy.mgmtServerCa, { type: 'generated', options: { rsaKeySizeBytes: 2048, ttlDays: 30 } });
  assert.equal(policy.intermediateCertOptions.orgName, 'acme');
});

test('given a bad policy file, when it is read, then MESHRELAY_ERR_INVALID_CONFIG names the file and the field', (t) => {
  const dir = tempDir(t, 'meshrelay-rtp-');
  const cases: [string, string, RegExp][] = [
    ['bad-ratio.yaml', GENERATED_POLICY.replace('0.2', '1.5'), /secretRotationGracePeriodRatio: must be a number/],
    ['not-policy.yaml', 'kind: Workspace\nmetadata: { name: w, namespace: n }\n', /kind must be RootTrustPolicy/],
    ['two.yaml', `${GENERATED_POLICY}---\n${GENERATED_POLICY}`, /exactly one RootTrustPolicy, found 2/],
  ];
  for (const [name, text, problem] of cases) {
    const file = join(dir, name);
    writeFileSync(file, text);
    assert.throws(
      () => loadRootTrustPolicyFile(file),
      (err: { code: string; message: string }) =>
        err.code === 'MESHRELAY_ERR_INVALID_CONFIG' && err.message.includes(file) && problem.test(err.message),
      name,
    );
  }
  assert.throws(() => loadRootTrustPolicyFile(join(dir, 'absent.yaml')), /cannot be read/);
});

test('given a trust tick below 100ms, when the config is parsed, then it is refused naming the flag', () => {
  assert.throws(
    () => parseServerConfig(['--trust-tick', '10ms']),
    /--trust-tick \(MESHRELAY_TRUST_TICK\): must be at least 100ms/,
  );
  assert.equal(parseServerConfig(['--trust-tick', '2s']).trustTickMs, 2000);
  assert.equal(parseServerConfig([]).trustTickMs, 5000);
});
