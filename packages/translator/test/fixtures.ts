/** A small two-cluster mesh for translator tests: reviews in both clusters, a VirtualDestination in cluster-a. */
import type { Resource } from '@meshrelay/api';
import {
  buildEastWestGateway,
  buildEndpointSlice,
  buildNode,
  buildPod,
  buildService,
  buildVirtualDestination,
} from '@meshrelay/testkit';

export function reviewsIn(cluster: 'a' | 'b', ips: readonly string[], zone: string): Resource[] {
  const region = cluster === 'a' ? 'us-east' : 'us-west';
  const node = `node-${cluster}`;
  return [
    buildNode({ name: node, region, zone }),
    buildService({
      name: 'reviews',
      namespace: 'bookinfo',
      ports: [{ name: 'http', port: 9080, targetPort: 9080 }],
      selector: { app: 'reviews' },
      labels: { app: 'reviews' },
    }),
    buildEndpointSlice({
      service: 'reviews',
      namespace: 'bookinfo',
      ports: [{ name: 'http', port: 9080 }],
      endpoints: ips.map((ip, i) => ({ ip, pod: `reviews-${cluster}-${i}`, node })),
    }),
    ...ips.map((ip, i) =>
      buildPod({
        name: `reviews-${cluster}-${i}`,
        namespace: 'bookinfo',
        ip,
        node,
        labels: { app: 'reviews' },
        serviceAccount: 'reviews',
      }),
    ),
  ];
}

export function reviewsDestination(name = 'reviews-global'): Resource {
  return buildVirtualDestination({
    name,
    namespace: 'bookinfo',
    hosts: [`${name}.mesh`],
    services: [{ name: 'reviews', namespace: 'bookinfo' }],
    ports: [{ number: 9080, protocol: 'HTTP' }],
  });
}

/**
 * cluster-a: reviews (2 pods), gateway 203.0.113.10, the VirtualDestination; cluster-b: reviews (1 pod), gateway
 * 203.0.113.20.
 */
export function twoClusterMesh(): Map<string, Resource[]> {
  return new Map([
    [
      'cluster-a',
      [
        ...reviewsIn('a', ['10.1.0.1', '10.1.0.2'], 'us-east-1a'),
        buildEastWestGateway({ address: '203.0.113.10' }),
        reviewsDestination(),
      ],
    ],
    ['cluster-b', [...reviewsIn('b', ['10.2.0.1'], 'us-west-2a'), buildEastWestGateway({ address: '203.0.113.20' })]],
  ]);
}
