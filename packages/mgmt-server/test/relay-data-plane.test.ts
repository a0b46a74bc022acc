/**
 * Agents report what their xDS servers see over the Pull stream; the management server shows it
 * (GET /api/v1/xds/proxies, meshrelay_xds_reported_* metrics) and folds what proxies cannot take
 * into the Gloo statuses of the resources the outputs came from.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { relay } from '@meshrelay/api';
import { STATUS_FIXTURE_NAMESPACE, statusFixture, waitFor } from '@meshrelay/testkit';
import type { ResourceStatus } from '@meshrelay/translator';
import { recordOfReport, type DataPlaneRecord } from '../src/data-plane-reports.ts';
import { withDataPlaneFindings } from '../src/data-plane-status.ts';
import {
  apiGet,
  bearer,
  mtlsClient,
  next,
  openPull,
  openPush,
  pushSnapshot,
  registerCluster,
  service,
  startTestServer,
  type TestServer,
} from './harness.ts';

const ROUTE_TABLE = `RouteTable/${STATUS_FIXTURE_NAMESPACE}/reviews-route@cluster-a`;

interface ClusterReport {
  readonly cluster: string;
  readonly reported: boolean;
  readonly agentConnected: boolean;
  readonly proxies: readonly {
    readonly nodeId: string;
    readonly nacks: number;
    readonly lastNack?: { readonly reason: string };
  }[];
  readonly proxiesNotListed: number;
}
interface ResourceRow {
  readonly kind: string;
  readonly name: string;
  readonly approval: string;
  readonly message: string;
  readonly clusters: Record<string, { readonly approval: string; readonly message: string }>;
}

async function connect(
  t: TestContext,
  server: TestServer,
  cluster: string,
  resources: Parameters<typeof pushSnapshot>[3],
) {
  const client = mtlsClient(t, server, await registerCluster(server, cluster));
  const push = openPush(client);
  t.after(() => push.end());
  pushSnapshot(push, cluster, 1, resources);
  await next(push, (m) => m.ack ?? undefined);
  const pull = openPull(client);
  t.after(() => pull.end());
  pull.write({ hello: { heldHash: '' } });
  // The server ends a stream that stays silent past its heartbeat timeout (1.5 s here).
  const beat = setInterval(() => {
    push.write({ heartbeat: { sentUnixMs: Date.now() } });
    pull.write({ heartbeat: { sentUnixMs: Date.now() } });
  }, 300);
  t.after(() => clearInterval(beat));
  await next(pull, (m) => m.header ?? undefined, 10_000);
  return pull;
}

function proxy(nodeId: string, nack?: string): relay.v1.IXdsProxy {
  return {
    nodeId,
    locality: 'us-east/us-east-1a',
    types: { lds: { names: ['reviews.bookinfo.svc.cluster.local:9080'], subscribed: 1, ackedVersion: 'v1' } },
    nacks: nack === undefined ? 0 : 1,
    ...(nack === undefined
      ? {}
      : {
          lastNack: {
            typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
            version: 'v2',
            reason: nack,
            atUnixMs: Date.now(),
          },
        }),
  };
}

const redirectFinding: relay.v1.IXdsFinding = {
  source: `VirtualService ${STATUS_FIXTURE_NAMESPACE}/reviews`,
  sources: [ROUTE_TABLE],
  field: 'spec.http[0].redirect',
  message: 'gRPC clients cannot follow redirects; the route is left out',
};

async function resource(
  server: TestServer,
  kind: string,
): Promise<ResourceRow | { approval: undefined; message: ''; clusters: Record<string, never> }> {
  const { resources } = await apiGet<{ resources: ResourceRow[] }>(server, '/api/v1/resources');
  // Before the first translation there is nothing yet: callers wait for an approval.
  return resources.find((r) => r.kind === kind) ?? { approval: undefined, message: '', clusters: {} };
}

test(
  'given an agent reporting proxies and a finding, then the API, the metrics and the Gloo status show them',
  { timeout: 60_000 },
  async (t) => {
    const server = await startTestServer(t);
    const pull = await connect(t, server, 'cluster-a', statusFixture());
    const sent: relay.v1.IResourceStatus[][] = [];
    pull.on('data', (m: relay.v1.IPullResponse) => void (m.statuses && sent.push(m.statuses.statuses ?? [])));
    await waitFor(async () => (await resource(server, 'RouteTable')).approval === 'ACCEPTED', {
      timeoutMs: 10_000,
      message: 'the RouteTable was never ACCEPTED',
    });

    pull.write({
      dataPlane: {
        sentUnixMs: Date.now(),
        serving: true,
        proxies: [proxy('client-1', 'ring_hash_lb_config unsupported')],
        findings: [redirectFinding],
      },
    });

    await t.test('the proxy, its NACK and the report are listed for its cluster', async () => {
      await waitFor(
        async () =>
          (await apiGet<{ clusters: ClusterReport[] }>(server, '/api/v1/xds/proxies?cluster=cluster-a')).clusters[0]
            ?.reported === true,
        { timeoutMs: 10_000, message: 'no report arrived' },
      );
      const [a] = (await apiGet<{ clusters: ClusterReport[] }>(server, '/api/v1/xds/proxies?cluster=cluster-a'))
        .clusters;
      assert.equal(a?.agentConnected, true);
      assert.deepEqual(
        a?.proxies.map((p) => [p.nodeId, p.nacks, p.lastNack?.reason]),
        [['client-1', 1, 'ring_hash_lb_config unsupported']],
      );
    });

    await t.test('the RouteTable the output came from is WARNING for cluster-a, naming the field', async () => {
      await waitFor(async () => (await resource(server, 'RouteTable')).approval === 'WARNING', {
        timeoutMs: 10_000,
        message: 'the finding never reached the status',
      });
      const rt = await resource(server, 'RouteTable');
      assert.match(rt.message, /spec\.http\[0\]\.redirect/);
      assert.equal(rt.clusters['cluster-a']?.approval, 'WARNING');
    });

    await t.test('the statuses sent to the agent carry the WARNING too', async () => {
      const warned = () => sent.flat().find((s) => s.kind === 'RouteTable' && s.state?.approval === 'WARNING');
      await waitFor(() => warned() !== undefined, {
        timeoutMs: 10_000,
        message: 'no WARNING status reached the agent',
      });
      assert.match(warned()?.state?.message ?? '', /redirect/);
    });

    await t.test('the metrics count the proxies, NACKs and findings of the cluster', async () => {
      const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
      assert.match(text, /meshrelay_xds_reported_proxies\{cluster="cluster-a"[^}]*\} 1/);
      assert.match(text, /meshrelay_xds_reported_nacks\{cluster="cluster-a"[^}]*\} 1/);
      assert.match(text, /meshrelay_xds_reported_findings\{cluster="cluster-a"[^}]*\} 1/);
    });

    await t.test('a report without the finding clears the WARNING', async () => {
      pull.write({ dataPlane: { sentUnixMs: Date.now(), serving: true, proxies: [proxy('client-1')], findings: [] } });
      await waitFor(async () => (await resource(server, 'RouteTable')).approval === 'ACCEPTED', {
        timeoutMs: 10_000,
        message: 'the WARNING stayed after the finding went',
      });
    });

    await t.test('when the Pull stream ends, the last report stays, marked disconnected', async () => {
      pull.cancel();
      await waitFor(
        async () =>
          (await apiGet<{ clusters: ClusterReport[] }>(server, '/api/v1/xds/proxies?cluster=cluster-a')).clusters[0]
            ?.agentConnected === false,
        { timeoutMs: 10_000, message: 'the report was never marked disconnected' },
      );
    });
  },
);

test('given a finding from a cluster a resource sends no output to, then its status is not touched; from one it reaches, it is', () => {
  const state = { observedGeneration: 3, approval: 'ACCEPTED' as const, message: '' };
  const status: ResourceStatus = {
    source: ROUTE_TABLE,
    cluster: 'cluster-a',
    apiVersion: 'networking.gloo.solo.io/v2',
    kind: 'RouteTable',
    namespace: STATUS_FIXTURE_NAMESPACE,
    name: 'reviews-route',
    state,
    clusters: { 'cluster-a': state },
    outputs: [
      {
        cluster: 'cluster-a',
        apiVersion: 'networking.istio.io/v1',
        kind: 'VirtualService',
        namespace: STATUS_FIXTURE_NAMESPACE,
        name: 'reviews',
      },
    ],
  };
  const report = (cluster: string): DataPlaneRecord =>
    recordOfReport(cluster, 'test-0', { serving: true, findings: [redirectFinding] }, new Date());
  const untouched = withDataPlaneFindings([status], [report('cluster-b')]);
  assert.equal(untouched[0], status, 'a cluster the resource does not reach changed its status');
  const [warned] = withDataPlaneFindings([status], [report('cluster-a')]);
  assert.equal(warned?.state.approval, 'WARNING');
  assert.equal(warned?.state.observedGeneration, 3);
  assert.match(
    warned?.clusters['cluster-a']?.message ?? '',
    /proxies in cluster-a cannot take .*spec\.http\[0\]\.redirect/,
  );
  const invalid = { ...status, state: { ...state, approval: 'INVALID' as const, message: 'bad port' } };
  assert.equal(
    withDataPlaneFindings([invalid], [report('cluster-a')])[0]?.state.approval,
    'INVALID',
    'a finding must never make a status look better',
  );
});

test(
  'given an oversized report, then the server keeps its bounds and counts what it left out',
  { timeout: 60_000 },
  async (t) => {
    const server = await startTestServer(t);
    const pull = await connect(t, server, 'cluster-a', [service('web')]);
    const proxies = Array.from({ length: 600 }, (_, i) => proxy(`client-${String(i).padStart(3, '0')}`));
    pull.write({ dataPlane: { sentUnixMs: Date.now(), serving: true, proxies, findings: [] } });
    await waitFor(
      async () =>
        (await apiGet<{ clusters: ClusterReport[] }>(server, '/api/v1/xds/proxies?cluster=cluster-a')).clusters[0]
          ?.reported === true,
      { timeoutMs: 10_000, message: 'no report' },
    );
    const [a] = (await apiGet<{ clusters: ClusterReport[] }>(server, '/api/v1/xds/proxies?cluster=cluster-a')).clusters;
    assert.equal(a?.proxies.length, 500);
    assert.equal(a?.proxiesNotListed, 100);
  },
);

test(
  'given the proxies API, then it needs the credential, and an unknown cluster is a clear 404',
  { timeout: 60_000 },
  async (t) => {
    const server = await startTestServer(t);
    assert.equal((await fetch(`${server.api}/api/v1/xds/proxies`)).status, 401);
    const res = await fetch(`${server.api}/api/v1/xds/proxies?cluster=nowhere`, { headers: bearer(server) });
    assert.equal(res.status, 404);
    assert.match(await res.text(), /MESHRELAY_ERR_CLUSTER_NOT_FOUND.*nowhere/);
    const bad = await fetch(`${server.api}/api/v1/xds/proxies?cluster=Not_A_Name`, { headers: bearer(server) });
    assert.equal(bad.status, 400);
  },
);
