/**
 * `node bench/tier-sizes.ts [--tiers S,M,L]`: the snapshot sizes each tier puts against the default
 * limits (issue 11.6), without translating a whole tier. Per tier:
 * - the largest input snapshot (cluster-0: its services plus every Gloo resource), generated exactly;
 * - the largest output, estimated from a slice with the tier's clusters, endpoints and Nodes but one
 *   exported service (one VirtualDestination): its per-VirtualDestination bytes and resources times
 *   the tier's VirtualDestinations. Outputs grow per VirtualDestination (one ServiceEntry,
 *   DestinationRule, VirtualService, AuthorizationPolicy each), so the estimate is close; tier S
 *   is translated whole as well, to show how close.
 * Prints a Markdown table.
 */
import { parseArgs } from 'node:util';
import { MeshrelayError, type OutputSnapshot } from '@meshrelay/api';
import {
  DEFAULT_VIP_CIDR,
  allocateVips,
  createIstioValidator,
  translate,
  virtualDestinationKeys,
} from '@meshrelay/translator';
import { TIERS, generateClusterInput, generateWorkload, type WorkloadShape } from './workload.ts';

interface Largest {
  readonly bytes: number;
  readonly resources: number;
}

function largestOutput(shape: WorkloadShape): Largest {
  const workload = generateWorkload(shape);
  const vips = allocateVips(new Map(), virtualDestinationKeys(workload.inputs), DEFAULT_VIP_CIDR);
  const result = translate({ inputs: workload.inputs, clusters: workload.clusters, vips }, createIstioValidator());
  if (result.outputs.size === 0)
    throw new MeshrelayError('MESHRELAY_ERR_TRANSLATION', 'the slice translated to no outputs');
  const largest = [...result.outputs.values()].reduce((a: OutputSnapshot, b) => (b.bytes > a.bytes ? b : a));
  return { bytes: largest.bytes, resources: largest.resources.length };
}

const mib = (n: number) => `${(n / 1024 / 1024).toFixed(2)} MiB`;

function row(tier: string, shape: WorkloadShape): string {
  const input = generateClusterInput(shape, 0);
  const virtualDestinations = Math.ceil(shape.servicesPerCluster / shape.exportEvery);
  const slice = largestOutput({ ...shape, servicesPerCluster: shape.exportEvery });
  const estimate = { bytes: slice.bytes * virtualDestinations, resources: slice.resources * virtualDestinations };
  const exact = tier === 'S' ? ` (translated whole: ${mib(largestOutput(shape).bytes)})` : '';
  return `| ${tier} | ${input.resources.length.toLocaleString('en-US')} | ${mib(input.bytes)} | ${estimate.resources.toLocaleString('en-US')} | ${mib(estimate.bytes)}${exact} |`;
}

const { values } = parseArgs({ options: { tiers: { type: 'string', default: 'S,M,L' } } });
const lines = [
  '| tier | largest input: resources | largest input: canonical bytes | largest output: resources (est.) | largest output: canonical bytes (est.) |',
  '|---|---:|---:|---:|---:|',
];
for (const tier of values.tiers.split(',')) {
  const shape = TIERS[tier.trim().toUpperCase()];
  if (!shape)
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      `--tiers: "${tier}" is not one of ${Object.keys(TIERS).join(', ')}`,
    );
  lines.push(row(tier.trim().toUpperCase(), shape));
  console.error(`tier ${tier} measured`);
}
console.log(lines.join('\n'));
