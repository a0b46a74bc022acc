import type { Resource } from '@meshrelay/api';
import { buildGloo, buildService } from './builders.ts';

/** The namespace of statusFixture's resources. */
export const STATUS_FIXTURE_NAMESPACE = 'bookinfo';

/**
 * A small config whose Gloo resources get two different approvals: the RouteTable `reviews-route`
 * is fully supported (ACCEPTED, one VirtualService), the AccessPolicy `reviews-lockdown` sets
 * `config.enforcementLayers`, which Meshrelay does not implement and which would weaken security if
 * ignored (INVALID, naming the field).
 */
export function statusFixture(): Resource[] {
  const namespace = STATUS_FIXTURE_NAMESPACE;
  return [
    buildService({ name: 'reviews', namespace, selector: { app: 'reviews' }, ports: [{ name: 'http', port: 9080 }] }),
    buildGloo('RouteTable', {
      name: 'reviews-route',
      namespace,
      spec: {
        hosts: ['reviews.example.com'],
        http: [
          {
            name: 'all',
            forwardTo: { destinations: [{ ref: { name: 'reviews', namespace }, port: { number: 9080 } }] },
          },
        ],
      },
    }),
    buildGloo('AccessPolicy', {
      name: 'reviews-lockdown',
      namespace,
      spec: {
        applyToWorkloads: [{ selector: { namespace, labels: { app: 'reviews' } } }],
        config: {
          authz: { allowedClients: [{ serviceAccountSelector: { namespace, name: 'productpage' } }] },
          enforcementLayers: { cni: true, mesh: true },
        },
      },
    }),
  ];
}
