import type { Command } from 'commander';
import { stringify } from 'yaml';
import type { InputSnapshot, OutputSnapshot, Provenance, Resource } from '../api-types.ts';
import { clusterArgument, type CliContext } from '../cli-context.ts';
import { shortHash } from '../format.ts';

/** What a snapshot holds, without its resources. */
export interface SnapshotSummary {
  readonly hash: string;
  readonly bytes: number;
  readonly resources: number;
  /** Resource count per kind, keys sorted. */
  readonly kinds: Readonly<Record<string, number>>;
}

export interface InputSummary extends SnapshotSummary {
  readonly epoch: string;
  readonly generation: number;
}

export interface OutputSummary extends SnapshotSummary {
  readonly provenance: readonly Provenance[];
}

/** Adds `snapshot input CLUSTER` and `snapshot output CLUSTER`. */
export function addSnapshotCommands(program: Command, ctx: CliContext): void {
  const snapshot = program
    .command('snapshot')
    .description('inspect the snapshots the management server holds for a cluster');

  snapshot
    .command('input')
    .description('the latest input snapshot the cluster pushed: summary, then its resources as YAML')
    .addArgument(clusterArgument('cluster'))
    .action(async (cluster: string, _flags: unknown, cmd: Command) => {
      const input = await ctx.client(cmd).getInputSnapshot(cluster);
      if (ctx.globals(cmd).output === 'json') return ctx.printJson(input);
      const s = summarizeInput(input);
      ctx.print(
        `Input snapshot of cluster "${cluster}": hash ${s.hash}, epoch ${s.epoch}, generation ${s.generation}, ${countText(s)}.`,
      );
      ctx.io.stdout.write(resourcesYaml(input.resources));
    });

  snapshot
    .command('output')
    .description('the output snapshot computed for the cluster: summary, then its resources as YAML')
    .addArgument(clusterArgument('cluster'))
    .action(async (cluster: string, _flags: unknown, cmd: Command) => {
      const output = await ctx.client(cmd).getOutputSnapshot(cluster);
      if (ctx.globals(cmd).output === 'json') return ctx.printJson(output);
      const s = summarizeOutput(output);
      const sources = s.provenance.map((p) => `${p.cluster}@${shortHash(p.inputHash)}`).join(', ') || 'none';
      ctx.print(`Output snapshot of cluster "${cluster}": hash ${s.hash}, ${countText(s)}, from inputs ${sources}.`);
      ctx.io.stdout.write(resourcesYaml(output.resources));
    });
}

export function summarizeInput(input: InputSnapshot): InputSummary {
  return { ...baseSummary(input), epoch: input.epoch, generation: input.generation };
}

export function summarizeOutput(output: OutputSnapshot): OutputSummary {
  return { ...baseSummary(output), provenance: output.provenance };
}

function baseSummary(snapshot: { hash: string; bytes: number; resources: readonly Resource[] }): SnapshotSummary {
  const counts = new Map<string, number>();
  for (const r of snapshot.resources) counts.set(r.kind, (counts.get(r.kind) ?? 0) + 1);
  const kinds = Object.fromEntries([...counts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return { hash: snapshot.hash, bytes: snapshot.bytes, resources: snapshot.resources.length, kinds };
}

function countText(s: SnapshotSummary): string {
  const kinds = Object.entries(s.kinds)
    .map(([kind, n]) => `${n} ${kind}`)
    .join(', ');
  return `${s.resources} ${s.resources === 1 ? 'resource' : 'resources'}${kinds ? ` (${kinds})` : ''}, ${s.bytes} bytes`;
}

/** Each resource as its own YAML document; a comment when there are none. */
function resourcesYaml(resources: readonly Resource[]): string {
  if (resources.length === 0) return '# no resources\n';
  return resources.map((r) => `---\n${stringify(r, { lineWidth: 0 })}`).join('');
}
