import type { Command } from 'commander';
import type { InterestsView } from '../api-types.ts';
import type { CliContext } from '../cli-context.ts';
import { formatAge, formatTimeLeft, renderTable } from '../format.ts';

/**
 * Two tables: each cluster's leases (host, how it was learned, when renewed, time left), then each
 * VirtualDestination with the clusters whose output carries it and those whose output leaves it out.
 */
export function renderInterests(view: InterestsView, now: Date): string {
  const leases = view.clusters.flatMap((c) =>
    c.leases.map((l) => [
      c.cluster,
      l.host,
      l.source,
      `${formatAge(l.renewedAt, now)} ago`,
      formatTimeLeft(l.expiresAt, now),
    ]),
  );
  const parts = [
    view.scoped
      ? 'Outputs are scoped by interest (--interest-scoped-outputs).'
      : 'Outputs are not scoped by interest (the server runs without --interest-scoped-outputs); leases are kept all the same.',
    leases.length === 0
      ? 'No cluster holds an interest lease.'
      : renderTable(['CLUSTER', 'HOST', 'LEARNED FROM', 'RENEWED', 'EXPIRES IN'], leases).trimEnd(),
  ];
  if (view.destinations.length > 0)
    parts.push(
      renderTable(
        ['DESTINATION', 'HOSTS', 'RECEIVING', 'NOT RECEIVING'],
        view.destinations.map((d) => [
          d.destination,
          d.hosts.join(',') || '-',
          d.receiving.join(',') || '-',
          d.notReceiving.join(',') || '-',
        ]),
      ).trimEnd(),
    );
  return `${parts.join('\n\n')}\n`;
}

/** Adds `interest list`. */
export function addInterestCommands(program: Command, ctx: CliContext): void {
  const interest = program
    .command('interest')
    .description('which VirtualDestinations each cluster holds an interest in, and which clusters receive each');
  interest
    .command('list')
    .description(
      'interest leases per cluster (host, learned from xDS or access logs, time to expiry) and per VirtualDestination the clusters receiving it',
    )
    .option('--cluster <name>', 'only this cluster')
    .action(async (flags: { cluster?: string }, cmd: Command) => {
      const g = ctx.globals(cmd);
      const all = await ctx.client(cmd).interests();
      const view: InterestsView =
        flags.cluster === undefined
          ? all
          : {
              ...all,
              clusters: all.clusters.filter((c) => c.cluster === flags.cluster),
              destinations: all.destinations.map((d) => ({
                ...d,
                receiving: d.receiving.filter((c) => c === flags.cluster),
                notReceiving: d.notReceiving.filter((c) => c === flags.cluster),
              })),
            };
      if (g.output === 'json') return ctx.printJson(view);
      ctx.print(renderInterests(view, ctx.now()));
    });
}
