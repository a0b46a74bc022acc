import { createIstioValidator } from '../src/istio-validator.ts';
const t = performance.now();
const v = createIstioValidator();
const se = { apiVersion: 'networking.istio.io/v1', kind: 'ServiceEntry', metadata: { name: 'reviews-vd', namespace: 'bookinfo', labels: { a: 'b' } },
  spec: { hosts: ['reviews.global'], addresses: ['10.30.0.5'], location: 'MESH_INTERNAL', resolution: 'STATIC', ports: [{ number: 9080, name: 'http-9080', protocol: 'HTTP' }],
    endpoints: [{ address: '10.0.0.1', ports: { 'http-9080': 9080 }, locality: 'us/us-1', network: 'a', labels: { x: 'y' }, weight: 2 }] } };
console.log(v.validate(se as never), performance.now() - t);
console.log(v.validate({ ...se, spec: { ...se.spec, foo: 1, location: 'BAD', ports: [{ number: 70000, name: 'x', protocol: 'HTTP' }] } } as never));
const vs = { apiVersion: 'networking.istio.io/v1', kind: 'VirtualService', metadata: { name: 'x', namespace: 'y' }, spec: { hosts: ['a'], http: [{ name: 'r', match: [{ uri: { prefix: '/' }, headers: { foo: {} }, withoutHeaders: { bar: { exact: 'x' } }, queryParams: { q: { regex: 'a' } }, method: { exact: 'GET' }, ignoreUriCase: true, port: 80 }], route: [{ destination: { host: 'a', port: { number: 80 } }, weight: 100 }], retries: { attempts: 3, perTryTimeout: '2s', retryOn: '5xx', retryRemoteLocalities: true }, timeout: '5s', rewrite: { uri: '/x', authority: 'b' } }] } };
console.log(v.validate(vs as never));
const dr = { apiVersion: 'networking.istio.io/v1', kind: 'DestinationRule', metadata: { name: 'x', namespace: 'y' }, spec: { host: 'a', trafficPolicy: { tls: { mode: 'ISTIO_MUTUAL' }, outlierDetection: { consecutive5xxErrors: 5, interval: '10s', baseEjectionTime: '30s', maxEjectionPercent: 100 }, loadBalancer: { localityLbSetting: { enabled: true, distribute: [{ from: 'us/*', to: { 'us/a/*': 100 } }], failover: [{from: 'a', to: 'b'}], failoverPriority: ['x'] } } } } };
console.log(v.validate(dr as never));
const ap = { apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy', metadata: { name: 'x', namespace: 'y' }, spec: { action: 'ALLOW', selector: { matchLabels: { app: 'r' } }, rules: [{ from: [{ source: { principals: ['a/ns/b/sa/c'], ipBlocks: ['1.2.3.4'] } }], to: [{ operation: { paths: ['/a'], methods: ['GET'], ports: ['99999'] } }] }] } };
console.log(v.validate(ap as never), performance.now() - t);
