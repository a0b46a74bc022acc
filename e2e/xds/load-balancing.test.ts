// Gloo's LoadBalancerPolicy as proxyless gRPC clients live it, and what happens when a client
// cannot take it. A consistent hash on a header pins each user to one backend. A client built
// without ring hash support (grpc-js-xds with GRPC_XDS_EXPERIMENTAL_ENABLE_RING_HASH=false, as
// older gRPC releases) NACKs that cluster update: it keeps calling on its last good config, and the
// NACK shows in `meshctl proxy list --cluster`, in the agent's and the server's metrics. LEAST_REQUEST,
// which gRPC clients do not have, is served as ROUND_ROBIN and the LoadBalancerPolicy is WARNING,
// naming the field, in `meshctl get`.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '@meshrelay/testkit';
import { meshctlAt } from '../meshctl/harness.ts';
import { NAMESPACE, XdsWorld, byVersion, type Picks } from './world.ts';

const HOST = 'ledger.global';

const DESTINATION = `apiVersion: networking.gloo.solo.io/v2
kind: VirtualDestination
metadata: { name: ledger-global, namespace: ${NAMESPACE}, labels: { app: ledger } }
spec:
  hosts: [${HOST}]
  services: [{ name: ledger, namespace: ${NAMESPACE} }]
  ports: [{ number: 9080, protocol: GRPC }]
`;

const policy = (config: string): string => `apiVersion: trafficcontrol.policy.gloo.solo.io/v2
kind: LoadBalancerPolicy
metadata: { name: ledger-lb, namespace: ${NAMESPACE} }
spec:
  applyToDestinations:
    - kind: VIRTUAL_DESTINATION
      selector: { labels: { app: ledger } }
  config:
${config}`;

const answered = (p: Picks): number => Object.values(p.counts).reduce((a, b) => a + b, 0);
const failed = (p: Picks): number => Object.values(p.errors).reduce((a, b) => a + b, 0);

interface ResourceRow {
  readonly kind: string;
  readonly name: string;
  readonly approval: string;
  readonly message: string;
}

test(
  'load balancing policies through the agent, and a client that cannot take them',
  { timeout: 600_000 },
  async (t) => {
    const world = await XdsWorld.start(t, ['cluster-a', 'cluster-b']);
    await world.addBackends([
      { service: 'ledger', cluster: 'cluster-a', version: 'v1', octet: 71 },
      { service: 'ledger', cluster: 'cluster-a', version: 'v2', octet: 72 },
    ]);
    world.mesh.writeManifest('cluster-a', 'ledger-global.yaml', DESTINATION);
    await world.until('cluster-a', HOST, (p) => answered(p) === 20);
    const server = world.mesh.servers[0];
    assert.ok(server);
    const meshctl = (args: string[]) => meshctlAt(server.api, args, { MESHRELAY_ADMIN_TOKEN: world.mesh.adminToken() });

    // A long-lived workload without ring hash, holding the round-robin config from before the policy.
    const legacy = await world.session(t, 'cluster-a', HOST, { GRPC_XDS_EXPERIMENTAL_ENABLE_RING_HASH: 'false' });
    await waitFor(() => answered(legacy.latest()) >= 20, {
      timeoutMs: 60_000,
      message: 'the long-lived client never got answers',
    });

    await t.test(
      'given a consistent hash on x-user, when a user calls, then every call lands on one backend',
      async () => {
        world.mesh.writeManifest(
          'cluster-a',
          'ledger-lb.yaml',
          policy('    consistentHash: { httpHeaderName: x-user }\n'),
        );
        // Sticky once the ring hash config is there: one backend for each of two users, 200 calls each.
        await world.until('cluster-a', HOST, (p) => Object.keys(p.counts).length === 1, { 'x-user': 'alice' });
        for (const user of ['alice', 'bob', 'carol']) {
          const picks = await world.call('cluster-a', HOST, 200, { 'x-user': user });
          assert.equal(Object.keys(picks.counts).length, 1, `${user}: ${JSON.stringify(picks)}`);
          assert.equal(answered(picks), 200, `${user}: ${JSON.stringify(picks)}`);
        }
      },
    );

    await t.test(
      'given a client without ring hash, when the hash policy arrives, then it NACKs, keeps calling on its last good config, and the NACK is visible',
      async (st) => {
        await waitFor(
          async () => {
            const r = await meshctl(['proxy', 'list', '--cluster', 'cluster-a']);
            return r.code === 0 && /lb_policy|RING_HASH/i.test(r.stdout);
          },
          { timeoutMs: 60_000, intervalMs: 500, message: 'meshctl proxy list never showed the NACK' },
        );
        const listed = await meshctl(['proxy', 'list', '--cluster', 'cluster-a']);
        st.diagnostic(listed.stdout);
        assert.match(listed.stdout, /^CLUSTER\s+NODE\s+LOCALITY\s+LDS\s+RDS\s+CDS\s+EDS\s+NACKS\s+LAST NACK$/m);
        assert.match(
          listed.stdout,
          /cluster-a\s+sidecar~127\.0\.0\.1~client\.bookinfo\S*\s+us-east\/us-east-1a\s.*\s[1-9]\d*\s+Cluster .*ago: .*RING_HASH/,
        );

        // Calls go on, all answered, on the round-robin cluster it kept: both backends, no failures.
        const before = legacy.latest();
        await waitFor(() => answered(legacy.latest()) >= answered(before) + 100, {
          timeoutMs: 60_000,
          message: 'the NACKing client stopped getting answers',
        });
        const after = legacy.latest();
        assert.equal(failed(after), failed(before), `calls failed after the NACK: ${JSON.stringify(after.errors)}`);
        const spread = byVersion({
          counts: Object.fromEntries(Object.entries(after.counts).map(([k, n]) => [k, n - (before.counts[k] ?? 0)])),
          errors: {},
        });
        assert.ok(
          (spread['v1'] ?? 0) > 0 && (spread['v2'] ?? 0) > 0,
          `the kept config is round robin over both: ${JSON.stringify(spread)}`,
        );

        const agent = world.mesh.agents.get('cluster-a');
        assert.ok(agent);
        const started = await agent.proc.waitForLine(/"relay agent started"/, 30_000);
        const healthPort = (JSON.parse(started) as { healthPort: number }).healthPort;
        assert.match(
          await (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text(),
          /meshrelay_xds_nacks_total\{type="cds"[^}]*\} [1-9]/,
        );
        assert.match(
          await world.mesh.metrics(server),
          /meshrelay_xds_reported_nacks\{cluster="cluster-a"[^}]*\} [1-9]/,
        );
      },
    );

    await t.test(
      'given LEAST_REQUEST, when served, then calls are round robin and the LoadBalancerPolicy is WARNING naming the field',
      async (st) => {
        world.mesh.writeManifest('cluster-a', 'ledger-lb.yaml', policy('    simple: LEAST_REQUEST\n'));
        // From client processes that exit: the warning names the clusters whose proxies the agents
        // report holding the destination, and a run in the world's caller closes its channel,
        // which ends its subscription before any report counts it.
        const picks = await world.until(
          'cluster-a',
          HOST,
          (p) => Object.keys(byVersion(p)).length === 2,
          { 'x-user': 'alice' },
          90_000,
          'new-process',
        );
        st.diagnostic(`picks: ${JSON.stringify(byVersion(picks))}`);
        let row: ResourceRow | undefined;
        await waitFor(
          async () => {
            const { resources } = await world.mesh.api<{ resources: ResourceRow[] }>(
              '/api/v1/resources?kind=LoadBalancerPolicy',
            );
            row = resources.find((r) => r.name === 'ledger-lb');
            return row?.approval === 'WARNING';
          },
          { timeoutMs: 60_000, intervalMs: 500, message: 'the LoadBalancerPolicy never turned WARNING' },
        );
        assert.match(
          row?.message ?? '',
          /proxies in cluster-a cannot take .*loadBalancer\.simple: LEAST_REQUEST is not available to gRPC clients/,
        );
        const listed = await meshctl(['get', 'loadbalancerpolicies']);
        st.diagnostic(listed.stdout);
        assert.equal(listed.code, 0, listed.stderr);
        assert.match(listed.stdout, /ledger-lb.*WARNING/);
      },
    );
  },
);
