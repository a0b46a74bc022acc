// Gloo route policies as a proxyless gRPC client lives them: FaultInjectionPolicy (abort share,
// delay) and RetryTimeoutPolicy (request timeout), applied to routes by route labels.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '@meshrelay/testkit';
import { NAMESPACE, XdsWorld, type Picks } from './world.ts';

interface Finding {
  readonly source: string;
  readonly field: string;
  readonly message: string;
}

const HOST = `orders.${NAMESPACE}.svc.cluster.local`;
const UNAVAILABLE = '14';
const DEADLINE_EXCEEDED = '4';

const route = (name: string): string => `    - name: ${name}
      labels: { case: ${name} }
      matchers: [{ headers: [{ name: x-case, value: ${name} }] }]
      forwardTo: { destinations: [{ ref: { name: orders, namespace: ${NAMESPACE} } }] }
`;

const MANIFESTS = `apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata: { name: orders, namespace: ${NAMESPACE} }
spec:
  hosts: [${HOST}]
  http:
${route('abort')}${route('delay')}${route('timeout')}${route('retry')}    - name: moved
      matchers: [{ headers: [{ name: x-case, value: moved }] }]
      redirect: { hostRedirect: elsewhere.example, responseCode: MOVED_PERMANENTLY }
    - name: plain
      forwardTo: { destinations: [{ ref: { name: orders, namespace: ${NAMESPACE} } }] }
---
apiVersion: resilience.policy.gloo.solo.io/v2
kind: FaultInjectionPolicy
metadata: { name: half-abort, namespace: ${NAMESPACE} }
spec:
  applyToRoutes: [{ route: { labels: { case: abort } } }]
  config:
    abort: { httpStatus: 503, percentage: 50 }
---
apiVersion: resilience.policy.gloo.solo.io/v2
kind: FaultInjectionPolicy
metadata: { name: slow, namespace: ${NAMESPACE} }
spec:
  applyToRoutes: [{ route: { labels: { case: delay } } }]
  config:
    delay: { fixedDelay: 4s, percentage: 100 }
---
apiVersion: resilience.policy.gloo.solo.io/v2
kind: RetryTimeoutPolicy
metadata: { name: short, namespace: ${NAMESPACE} }
spec:
  applyToRoutes: [{ route: { labels: { case: timeout } } }]
  config:
    requestTimeout: 1s
---
apiVersion: resilience.policy.gloo.solo.io/v2
kind: RetryTimeoutPolicy
metadata: { name: retry-unavailable, namespace: ${NAMESPACE} }
spec:
  applyToRoutes: [{ route: { labels: { case: retry } } }]
  config:
    retries: { attempts: 2, retryOn: unavailable }
`;

const answered = (p: Picks): number => Object.values(p.counts).reduce((a, b) => a + b, 0);

test('route policies through the agent', { timeout: 600_000 }, async (t) => {
  const world = await XdsWorld.start(t, ['cluster-a']);
  await world.addBackends([{ service: 'orders', cluster: 'cluster-a', version: 'v1', octet: 71 }]);
  world.mesh.writeManifest('cluster-a', 'orders-policies.yaml', MANIFESTS);

  await t.test(
    'given a 50 % abort with 503, when 2,000 calls are made, then 50 % within 5 points fail UNAVAILABLE and the rest answer',
    async (sub) => {
      await world.until('cluster-a', HOST, (p) => (p.errors[UNAVAILABLE] ?? 0) > 0 && answered(p) > 0, {
        'x-case': 'abort',
      });
      const picks = await world.call('cluster-a', HOST, 2000, { 'x-case': 'abort' });
      const share = (picks.errors[UNAVAILABLE] ?? 0) / 2000;
      sub.diagnostic(`aborted share over 2,000 calls: ${(share * 100).toFixed(1)} %`);
      assert.equal(answered(picks) + (picks.errors[UNAVAILABLE] ?? 0), 2000, JSON.stringify(picks));
      assert.ok(Math.abs(share - 0.5) <= 0.05, `aborted share ${share.toFixed(3)}`);
    },
  );

  await t.test(
    'given a 4 s delay on every call, when the caller allows 2 s, then each call exceeds its deadline while the plain route answers',
    async () => {
      await world.until('cluster-a', HOST, (p) => answered(p) === 20, { 'x-case': 'plain' });
      const delayed = await world.call('cluster-a', HOST, 3, { 'x-case': 'delay' }, 2_000);
      assert.deepEqual(delayed, { counts: {}, errors: { [DEADLINE_EXCEEDED]: 3 } });
    },
  );

  await t.test(
    'given a 1 s request timeout, when the backend answers after 3 s, then the call ends DEADLINE_EXCEEDED; a quick answer passes',
    async () => {
      const slow = await world.call('cluster-a', HOST, 3, { 'x-case': 'timeout', 'x-sleep-ms': '3000' });
      assert.deepEqual(slow, { counts: {}, errors: { [DEADLINE_EXCEEDED]: 3 } });
      const quick = await world.call('cluster-a', HOST, 3, { 'x-case': 'timeout' });
      assert.equal(answered(quick), 3, JSON.stringify(quick));
    },
  );

  await t.test(
    'given 2 retries on unavailable, when every other answer fails, then every call succeeds; without retries half fail',
    async () => {
      const retried = await world.call('cluster-a', HOST, 40, { 'x-case': 'retry', 'x-fail-every': '2' });
      assert.deepEqual({ answered: answered(retried), errors: retried.errors }, { answered: 40, errors: {} });
      const plain = await world.call('cluster-a', HOST, 40, { 'x-case': 'plain', 'x-fail-every': '2' });
      assert.equal(plain.errors[UNAVAILABLE], 20, JSON.stringify(plain));
    },
  );

  await t.test(
    'given a redirect route gRPC cannot take, when the config is served, then it is left out, reported at /xds/findings, and the other routes answer',
    async () => {
      const agent = world.mesh.agents.get('cluster-a');
      assert.ok(agent);
      const started = await agent.proc.waitForLine(/"relay agent started"/, 30_000);
      const port = (JSON.parse(started) as { healthPort: number }).healthPort;
      const findings = (await (await fetch(`http://127.0.0.1:${port}/xds/findings`)).json()) as Finding[];
      assert.ok(
        findings.some((f) => /redirect/i.test(`${f.field} ${f.message}`) && f.source.includes('orders')),
        JSON.stringify(findings),
      );
      const plain = await world.call('cluster-a', HOST, 5, { 'x-case': 'plain' });
      assert.equal(answered(plain), 5, JSON.stringify(plain));
    },
  );

  await t.test(
    'given that finding, when the RouteTable is read where its owners look, then it is WARNING for cluster-a naming the redirect',
    async () => {
      let row: { approval: string; message: string; clusters: Record<string, { approval: string }> } | undefined;
      await waitFor(
        async () => {
          const { resources } = await world.mesh.api<{
            resources: {
              name: string;
              approval: string;
              message: string;
              clusters: Record<string, { approval: string }>;
            }[];
          }>('/api/v1/resources?kind=RouteTable&name=orders');
          row = resources[0];
          return row?.approval === 'WARNING';
        },
        { timeoutMs: 60_000, intervalMs: 500, message: 'the RouteTable never turned WARNING' },
      );
      assert.match(row?.message ?? '', /proxies in cluster-a cannot take .*spec\.http\[\d+\]\.redirect/);
      assert.equal(row?.clusters['cluster-a']?.approval, 'WARNING');
    },
  );
});
