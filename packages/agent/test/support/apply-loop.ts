/**
 * `node apply-loop.ts <outputDir> <stateDir> <first>`: a real FileOutputWriter in its own process
 * for crash tests. Restores what the state dir holds, then applies outputs `first`, `first + 1`, …
 * forever (each changes one resource, every fourth adds or drops one), printing
 * `applying <n> <hash>` before and `applied <n> <hash>` after each, until it is killed.
 */
import { pino } from 'pino';
import { buildOutputSnapshot, type OutputSnapshot, type Resource } from '@meshrelay/api';
import { FileOutputWriter } from '../../src/apply/output-writer.ts';

const RESOURCES = 300;

export function loopResource(i: number, seed: number): Resource {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name: `svc-${i}`, namespace: 'imports' },
    spec: {
      hosts: [`svc-${i}.global`],
      endpoints: Array.from({ length: 40 }, (_, e) => ({
        address: `10.0.${i % 250}.${e}`,
        weight: 1 + ((e + seed) % 9),
      })),
    },
  };
}

/** Output `n`: resource `n % RESOURCES` carries seed `n`; resource RESOURCES is there when `n % 4 < 2`. */
export function loopOutput(n: number, previous?: OutputSnapshot): OutputSnapshot {
  const resources = Array.from({ length: RESOURCES }, (_, i) => loopResource(i, i === n % RESOURCES ? n : 0));
  if (n % 4 < 2) resources.push(loopResource(RESOURCES, 0));
  return buildOutputSnapshot(
    { cluster: 'east', resources, provenance: [{ cluster: 'east', inputHash: 'a'.repeat(64) }] },
    previous,
  );
}

async function main(): Promise<void> {
  const [outputDir, stateDir, first] = process.argv.slice(2);
  if (outputDir === undefined || stateDir === undefined || first === undefined)
    throw new Error('usage: apply-loop.ts <outputDir> <stateDir> <first>');
  const writer = new FileOutputWriter({ cluster: 'east', outputDir, stateDir, logger: pino({ level: 'silent' }) });
  const restored = await writer.restore();
  process.stdout.write(`restored ${restored?.hash ?? 'nothing'}\n`);
  let previous: OutputSnapshot | undefined;
  for (let n = Number(first); ; n++) {
    const output = loopOutput(n, previous);
    previous = output;
    process.stdout.write(`applying ${n} ${output.hash}\n`);
    await writer.apply(output);
    process.stdout.write(`applied ${n} ${output.hash}\n`);
  }
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) await main();
