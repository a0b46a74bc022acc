import { validateInputResource } from '../src/index.ts';
const cases: unknown[] = [
  { apiVersion: 'v1', kind: 'Service', metadata: { name: 'reviews', namespace: 'bookinfo' }, spec: { ports: [{ port: 70000, targetPort: 0 }], externalIPs: ['x'] } },
  { apiVersion: 'networking.gloo.solo.io/v2', kind: 'VirtualDestination', metadata: { name: 'Bad_Name' }, spec: { hosts: ['reviews.global'], services: [{ labels: { app: 'reviews' } }], ports: [{ number: 9080, protocol: 'HTTPX', foo: 1 }] } },
  { apiVersion: 'networking.gloo.solo.io/v2', kind: 'RouteTable', metadata: { name: 'rt', namespace: 'ns' }, spec: { hosts: ['a.b'], http: [{ matchers: [{ uri: {} }, { uri: { exact: 'a', prefix: 'b' } }], forwardTo: { destinations: [{ ref: { name: 'x' }, port: { number: 1, name: 'a' } }] } }] } },
  { apiVersion: 'resilience.policy.gloo.solo.io/v2', kind: 'FailoverPolicy', metadata: { name: 'f', namespace: 'ns' }, spec: { config: { localityMappings: [], priorityLabels: { labels: ['a'] } } } },
  { apiVersion: 'resilience.policy.gloo.solo.io/v2', kind: 'RetryTimeoutPolicy', metadata: { name: 'f', namespace: 'ns' }, spec: { config: {} } },
  { apiVersion: 'v1', kind: 'Foo', metadata: { name: 'x' } },
];
for (const c of cases) console.log(JSON.stringify(validateInputResource(c as never)));
