import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { statusFixture, waitFor } from '@meshrelay/testkit';
import { mtlsClient, next, openPush, pushSnapshot, register } from '../../packages/mgmt-server/test/harness.ts';
import type { CheckReport } from '@meshrelay/meshctl';
import { apiGet, meshctlAt, startServer, tokenFrom, type RunningServer } from './harness.ts';

/**
 * A server whose cluster-a pushed statusFixture() (an ACCEPTED RouteTable, an INVALID AccessPolicy), once both have a
 * status.
 */
async function serverWithFixture(t: TestContext): Promise<RunningServer> {
  const running = await startServer(t);
  const registered = await meshctlAt(running.url, ['cluster', 'register', 'cluster-a']);
  assert.equal(registered.code, 0, registered.stderr);
  const identity = await register(running.server, 'cluster-a', tokenFrom(registered.stdout));
  const push = openPush(mtlsClient(t, running.server, identity));
  t.after(() => push.end());
  pushSnapshot(push, 'cluster-a', 1, statusFixture());
  await next(push, (m) => m.ack ?? undefined);
  await waitFor(
    async () => (await apiGet<{ resources: unknown[] }>(running, '/api/v1/resources')).resources.length === 2,
    {
      message: 'two resource statuses',
    },
  );
  return running;
}

test('given an INVALID AccessPolicy, when `meshctl get accesspolicies` runs, then a table names it with its approval and message', async (t) => {
  const running = await serverWithFixture(t);
  const result = await meshctlAt(running.url, ['get', 'accesspolicies']);
  assert.equal(result.code, 0, result.stderr);
  const [header, ...rows] = result.stdout.trimEnd().split('\n');
  assert.match(header ?? '', /^KIND +NAMESPACE +NAME +CLUSTER +APPROVAL +MESSAGE +OUTPUTS$/);
  assert.equal(rows.length, 1, result.stdout);
  assert.match(rows[0] ?? '', /^AccessPolicy +bookinfo +reviews-lockdown +cluster-a +INVALID +.*enforcementLayers/);
});

test('given an ACCEPTED RouteTable, when `meshctl get RouteTable NAME -o json` runs, then it lists the outputs it produced', async (t) => {
  const running = await serverWithFixture(t);
  const result = await meshctlAt(running.url, [
    'get',
    'RouteTable',
    'reviews-route',
    '--cluster',
    'cluster-a',
    '--namespace',
    'bookinfo',
    '-o',
    'json',
  ]);
  assert.equal(result.code, 0, result.stderr);
  const { resources } = JSON.parse(result.stdout) as {
    resources: { name: string; approval: string; outputs: { kind: string; cluster: string }[] }[];
  };
  assert.deepEqual(
    resources.map((r) => [r.name, r.approval, r.outputs.map((o) => `${o.cluster} ${o.kind}`)]),
    [['reviews-route', 'ACCEPTED', ['cluster-a VirtualService']]],
  );
});

test('given a kind that is not a Gloo kind, when `meshctl get` runs, then it exits 1 naming the kind', async (t) => {
  const running = await startServer(t);
  const result = await meshctlAt(running.url, ['get', 'deployments']);
  assert.equal(result.code, 1);
  assert.match(
    result.stderr,
    /^meshctl: MESHRELAY_ERR_INVALID_ARGUMENT: kind "deployments" is not a Gloo kind \(known: .*AccessPolicy/,
  );
});

test('given an INVALID AccessPolicy, when `meshctl check` runs, then the resources check fails naming it and meshctl exits 1', async (t) => {
  const running = await serverWithFixture(t);
  const result = await meshctlAt(running.url, ['check', '-o', 'json']);
  assert.equal(result.code, 1);
  const report = JSON.parse(result.stdout) as CheckReport;
  const check = report.checks.find((c) => c.name === 'resources');
  assert.equal(check?.ok, false);
  assert.match(
    check?.detail ?? '',
    /AccessPolicy bookinfo\/reviews-lockdown in cluster-a is INVALID: .*enforcementLayers/,
  );
  assert.doesNotMatch(check?.detail ?? '', /RouteTable/);
});
