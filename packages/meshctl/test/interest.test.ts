/** meshctl interest list: the leases and receivers the management server reports, as tables. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { InterestsView } from '../src/api-types.ts';
import { renderInterests } from '../src/commands/interest.ts';

const NOW = new Date('2026-11-29T10:00:00Z');

const VIEW: InterestsView = {
  scoped: true,
  clusters: [
    {
      cluster: 'cluster-b',
      leases: [
        {
          host: 'catalog.global',
          source: 'xds',
          renewedAt: '2026-11-29T09:59:30Z',
          expiresAt: '2026-11-29T10:09:30Z',
        },
      ],
      destinations: [{ destination: 'VirtualDestination/shop/catalog@cluster-a', reason: 'lease' }],
    },
    { cluster: 'cluster-c', leases: [], destinations: [] },
  ],
  destinations: [
    {
      destination: 'VirtualDestination/shop/catalog@cluster-a',
      hosts: ['catalog.global'],
      receiving: ['cluster-a', 'cluster-b'],
      notReceiving: ['cluster-c'],
    },
  ],
};

test('given leases and receivers, when rendered, then each lease shows its source and time left and each destination its receivers', () => {
  const text = renderInterests(VIEW, NOW);
  assert.match(text, /^Outputs are scoped by interest/);
  assert.match(text, /cluster-b\s+catalog\.global\s+xds\s+30s ago\s+9m/);
  assert.match(text, /VirtualDestination\/shop\/catalog@cluster-a\s+catalog\.global\s+cluster-a,cluster-b\s+cluster-c/);
});

test('given no lease and no scoping, when rendered, then it says both', () => {
  const text = renderInterests({ scoped: false, clusters: [], destinations: [] }, NOW);
  assert.match(text, /not scoped by interest/);
  assert.match(text, /No cluster holds an interest lease\./);
});
