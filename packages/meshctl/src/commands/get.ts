import type { Command } from 'commander';
import type { ResourceView } from '../api-types.ts';
import type { CliContext } from '../cli-context.ts';
import { renderTable } from '../format.ts';

interface GetFlags {
  readonly cluster?: string;
  readonly namespace?: string;
}

/** Adds `get KIND [NAME]`: Gloo resources with their approval, message and the outputs each produced. */
export function addGetCommand(program: Command, ctx: CliContext): void {
  program
    .command('get')
    .description(
      'list Gloo resources of a kind (e.g. routetables, AccessPolicy) with their approval, message and the outputs each produced',
    )
    .argument('<kind>', 'a Gloo kind, in any case, singular or plural (routetable, RouteTables, accesspolicy, ...)')
    .argument('[name]', 'only the resource of this name')
    .option('--cluster <cluster>', 'only resources that live in this cluster')
    .option('--namespace <namespace>', 'only resources in this namespace')
    .action(async (kind: string, name: string | undefined, flags: GetFlags, cmd: Command) => {
      // An unknown kind is the server's 400 MESHRELAY_ERR_INVALID_ARGUMENT naming it and the known kinds.
      const resources = await ctx.client(cmd).listResources({
        kind,
        ...(name !== undefined ? { name } : {}),
        ...(flags.cluster !== undefined ? { cluster: flags.cluster } : {}),
        ...(flags.namespace !== undefined ? { namespace: flags.namespace } : {}),
      });
      if (ctx.globals(cmd).output === 'json') return ctx.printJson({ resources });
      if (resources.length === 0) return ctx.print(`No ${kind}${name === undefined ? '' : ` named "${name}"`} found.`);
      ctx.print(renderResourceTable(resources));
    });
}

/** `cluster Kind namespace/name` of every output, comma separated; "-" for none. */
export function formatOutputs(resource: ResourceView): string {
  if (resource.outputs.length === 0) return '-';
  return resource.outputs.map((o) => `${o.cluster} ${o.kind} ${o.namespace}/${o.name}`).join(', ');
}

export function renderResourceTable(resources: readonly ResourceView[]): string {
  const rows = resources.map((r) => [
    r.kind,
    r.namespace,
    r.name,
    r.cluster,
    r.approval,
    r.message === '' ? '-' : r.message,
    formatOutputs(r),
  ]);
  return renderTable(['KIND', 'NAMESPACE', 'NAME', 'CLUSTER', 'APPROVAL', 'MESSAGE', 'OUTPUTS'], rows);
}
