/**
 * What the translated RBAC decides, judged by gRPC's own evaluator: each case's
 * AuthorizationPolicies are translated to a server Listener, its RBAC filters go through the
 * proto encoding and grpc-js-xds's `parseConfig`, and a call is allowed when every filter lets
 * it through (as the server's interceptors do).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PeerCertificate } from 'node:tls';
import { Metadata } from '@grpc/grpc-js';
import { parseConfig } from '@grpc/grpc-js-xds/build/src/rbac.js';
import type { RBAC__Output } from '@grpc/grpc-js-xds/build/src/generated/envoy/config/rbac/v3/RBAC.js';
import type { Resource } from '@meshrelay/api';
import { buildXdsConfig, serverListenerFor } from '../src/index.ts';
import { loadEnvoyRoot } from './envoy-protos.ts';

const RBAC = loadEnvoyRoot(['envoy/extensions/filters/http/rbac/v3/rbac.proto']).lookupType(
  'envoy.config.rbac.v3.RBAC',
);
const LISTENER = 'grpc/server?xds.resource.listening_address=10.1.0.7:8080';

interface Call {
  /** The caller's SPIFFE id; undefined: no client certificate. */
  readonly from?: string;
  readonly path?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly sourceIp?: string;
}

function policy(name: string, spec: Record<string, unknown>, namespace = 'bookinfo'): Resource {
  return { apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy', metadata: { name, namespace }, spec };
}

/** Whether the server Listener translated from `policies` lets `call` through. */
function allowed(policies: Resource[], call: Call): boolean {
  const config = buildXdsConfig({
    cluster: 'cluster-a',
    meshTls: { trustDomain: 'cluster-a.local' },
    output: policies,
    discovered: [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'ratings-0', namespace: 'bookinfo', labels: { app: 'ratings' } },
        status: { podIP: '10.1.0.7' },
      } as unknown as Resource,
    ],
  });
  const listener = serverListenerFor(config, LISTENER)?.body as {
    default_filter_chain: {
      filters: { typed_config: { http_filters: { typed_config: Record<string, unknown> }[] } }[];
    };
  };
  const filters = listener.default_filter_chain.filters[0]?.typed_config.http_filters ?? [];
  const headers = new Metadata();
  for (const [k, v] of Object.entries({ ':method': 'POST', ...call.headers })) headers.set(k, v);
  const info = {
    destinationIp: '10.1.0.7',
    destinationPort: 8080,
    sourceIp: call.sourceIp ?? '10.2.0.9',
    headers,
    tls: true,
    peerCertificate:
      call.from === undefined ? null : ({ subject: {}, subjectaltname: `URI:${call.from}` } as PeerCertificate),
    urlPath: call.path ?? '/pkg.Ratings/Get',
  };
  return filters
    .filter((f) => f.typed_config['@type'] !== 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router')
    .every((f) => {
      const message = RBAC.fromObject(f.typed_config['rules'] as Record<string, unknown>);
      const rules = RBAC.toObject(message, { oneofs: true, defaults: true, enums: String, longs: String });
      return parseConfig(rules as RBAC__Output).apply(info);
    });
}

const REVIEWS = 'spiffe://cluster-b.local/ns/bookinfo/sa/reviews';
const INTRUDER = 'spiffe://cluster-b.local/ns/shop/sa/intruder';

describe('translated RBAC, as gRPC evaluates it', () => {
  it('given no AuthorizationPolicy, when anyone calls, then the call is allowed', () => {
    assert.equal(allowed([], { from: INTRUDER }), true);
    assert.equal(allowed([], {}), true);
  });

  it('given ALLOW for a principal and a path, when calls vary by caller and path, then only that pair passes', () => {
    const p = [
      policy('callers', {
        rules: [
          {
            from: [{ source: { principals: ['cluster-b.local/ns/bookinfo/sa/reviews'] } }],
            to: [{ operation: { paths: ['/pkg.Ratings/Get'], methods: ['POST'] } }],
          },
        ],
      }),
    ];
    assert.equal(allowed(p, { from: REVIEWS }), true);
    assert.equal(allowed(p, { from: REVIEWS, path: '/pkg.Ratings/Put' }), false);
    assert.equal(allowed(p, { from: INTRUDER }), false);
    assert.equal(allowed(p, {}), false);
  });

  it('given ALLOW by a prefix and by a suffix principal, when callers of two namespaces call, then one passes', () => {
    for (const principal of ['cluster-b.local/ns/bookinfo/sa/*', '*/ns/bookinfo/sa/reviews']) {
      const p = [policy('wild', { rules: [{ from: [{ source: { principals: [principal] } }] }] })];
      assert.equal(allowed(p, { from: REVIEWS }), true, principal);
      assert.equal(allowed(p, { from: INTRUDER }), false, principal);
    }
  });

  it('given DENY notNamespaces bookinfo, when callers of two namespaces call, then the other namespace is denied', () => {
    const p = [
      policy('outsiders', { action: 'DENY', rules: [{ from: [{ source: { notNamespaces: ['bookinfo'] } }] }] }),
    ];
    assert.equal(allowed(p, { from: REVIEWS }), true);
    assert.equal(allowed(p, { from: INTRUDER }), false);
  });

  it('given DENY on an ip block, when calls come from inside and outside it, then only the inside is denied', () => {
    const p = [policy('block', { action: 'DENY', rules: [{ from: [{ source: { ipBlocks: ['10.3.0.0/16'] } }] }] })];
    assert.equal(allowed(p, { from: REVIEWS, sourceIp: '10.3.4.5' }), false);
    assert.equal(allowed(p, { from: REVIEWS, sourceIp: '10.4.4.5' }), true);
  });

  it('given ALLOW when a header has a value, when calls carry it or not, then only the carrier passes', () => {
    const p = [policy('header', { rules: [{ when: [{ key: 'request.headers[X-User]', values: ['tester'] }] }] })];
    assert.equal(allowed(p, { from: REVIEWS, headers: { 'x-user': 'tester' } }), true);
    assert.equal(allowed(p, { from: REVIEWS, headers: { 'x-user': 'other' } }), false);
    assert.equal(allowed(p, { from: REVIEWS }), false);
  });

  it('given ALLOW on JWT principals only, when anyone calls, then everyone is denied (gRPC cannot check them)', () => {
    const p = [policy('jwt', { rules: [{ from: [{ source: { requestPrincipals: ['issuer/*'] } }] }] })];
    assert.equal(allowed(p, { from: REVIEWS }), false);
  });

  it('given DENY on a JWT condition, when anyone calls, then everyone is denied (the condition counts as met)', () => {
    const p = [
      policy('jwt-deny', { action: 'DENY', rules: [{ when: [{ key: 'request.auth.claims[group]', values: ['x'] }] }] }),
    ];
    assert.equal(allowed(p, { from: REVIEWS }), false);
  });

  it('given an ALLOW and a DENY, when a caller matches both, then DENY wins', () => {
    const p = [
      policy('allow', { rules: [{ from: [{ source: { namespaces: ['bookinfo'] } }] }] }),
      policy('deny', { action: 'DENY', rules: [{ to: [{ operation: { paths: ['/pkg.Ratings/Put'] } }] }] }),
    ];
    assert.equal(allowed(p, { from: REVIEWS }), true);
    assert.equal(allowed(p, { from: REVIEWS, path: '/pkg.Ratings/Put' }), false);
  });

  it('given an ALLOW policy in the root namespace, when a caller it does not name calls, then it is denied', () => {
    const p = [
      policy(
        'mesh',
        { rules: [{ from: [{ source: { principals: ['cluster-b.local/ns/bookinfo/sa/reviews'] } }] }] },
        'istio-system',
      ),
    ];
    assert.equal(allowed(p, { from: INTRUDER }), false);
    assert.equal(allowed(p, { from: REVIEWS }), true);
  });

  it('given an ALLOW policy for other workloads, when anyone calls this one, then it is not affected', () => {
    const p = [policy('details-only', { selector: { matchLabels: { app: 'details' } } })];
    assert.equal(allowed(p, { from: INTRUDER }), true);
  });
});
