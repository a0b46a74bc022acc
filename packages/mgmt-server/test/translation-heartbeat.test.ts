// The event loop stays free while the translation loop runs a large cold translation.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KINDS, buildInputSnapshot, type Resource } from '@meshrelay/api';
import {
  buildEastWestGateway,
  buildEndpointSlice,
  buildGloo,
  buildNode,
  buildPod,
  buildService,
  buildVirtualDestination,
} from '@meshrelay/testkit';
import { translationSetup } from './translation-setup.ts';

// 20 clusters × 500 Services × 5 endpoints (≈ 70 k input resources): large enough that a
// translation done in one go blocks the event loop for many seconds on this machine, small
// enough to build and store in a test's time and memory.
const CLUSTERS = 20;
const SERVICES = 500;
const ENDPOINTS = 5;
const TICK_MS = 100;
const MAX_GAP_MS = 1000;

function clusterInput(c: number): Resource[] {
  const node = `node-${c}`;
  const out: Resource[] = [
    buildNode({ name: node, region: `region-${c % 3}`, zone: `zone-${c}` }),
    buildEastWestGateway({ address: `203.0.113.${c + 1}` }),
  ];
  for (let s = 0; s < SERVICES; s++) {
    const name = `svc-${s}`;
    const namespace = `ns-${s % 4}`;
    const ips = Array.from(
      { length: ENDPOINTS },
      (_, e) => `10.${100 + c}.${Math.floor((s * ENDPOINTS + e) / 250)}.${((s * ENDPOINTS + e) % 250) + 1}`,
    );
    out.push(
      buildService({
        name,
        namespace,
        ports: [{ name: 'http', port: 8080, targetPort: 8080 }],
        selector: { app: name },
        labels: { app: name },
      }),
    );
    out.push(
      buildEndpointSlice({
        service: name,
        namespace,
        ports: [{ name: 'http', port: 8080 }],
        endpoints: ips.map((ip, e) => ({ ip, pod: `${name}-${e}`, node })),
      }),
    );
    for (const [e, ip] of ips.entries())
      out.push(buildPod({ name: `${name}-${e}`, namespace, ip, node, labels: { app: name }, serviceAccount: name }));
    if (c === 0 && s % 10 === 0) {
      out.push(
        buildVirtualDestination({
          name: `${name}-global`,
          namespace,
          hosts: [`${name}.global`],
          services: [{ labels: { app: name }, namespace }],
          ports: [{ number: 8080, protocol: 'HTTP' }],
        }),
      );
      out.push(
        buildGloo('RouteTable', {
          name: `${name}-routes`,
          namespace,
          spec: {
            hosts: [`${name}.global`],
            http: [
              {
                name: 'api',
                forwardTo: {
                  destinations: [
                    { ref: { name: `${name}-global` }, kind: 'VIRTUAL_DESTINATION', port: { number: 8080 } },
                  ],
                },
              },
            ],
          },
        }),
      );
      out.push(
        buildGloo('AccessPolicy', {
          name: `${name}-access`,
          namespace,
          spec: {
            applyToDestinations: [{ kind: 'VIRTUAL_DESTINATION', selector: { name: `${name}-global` } }],
            config: { authz: { allowedClients: [{ serviceAccountSelector: { name, namespace } }] } },
          },
        }),
      );
    }
  }
  return out;
}

test('given a large workload stored for 20 clusters, when the translation loop runs its cold translation, then a 100 ms timer never waits more than a second', async (t) => {
  const { registry, store, outputs, loop } = await translationSetup(t, {
    keyPrefix: 'heartbeat',
    commandTimeoutMs: 5000,
  });
  for (let c = 0; c < CLUSTERS; c++) {
    await registry.register(`c${c}`, {});
    await store.putInput(
      buildInputSnapshot({ cluster: `c${c}`, epoch: 'e', generation: 1, resources: clusterInput(c) }),
    );
  }

  const gaps: number[] = [];
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    gaps.push(now - last);
    last = now;
  }, TICK_MS);
  t.after(() => clearInterval(timer));
  await loop.runNow();
  clearInterval(timer);

  const published = Array.from({ length: CLUSTERS }, (_, c) => outputs.current(`c${c}`));
  assert.ok(
    published.every((o) => o !== undefined && o.resources.some((r) => r.kind === KINDS.ServiceEntry.kind)),
    'every cluster got its output',
  );
  assert.ok(gaps.length > 0, 'the timer never fired during the translation');
  const worst = Math.max(...gaps, performance.now() - last);
  assert.ok(worst <= MAX_GAP_MS, `the timer waited ${worst.toFixed(0)} ms (${gaps.length} ticks)`);
});
