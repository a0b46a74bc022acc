import type { Command } from 'commander';
import type { CliContext } from '../cli-context.ts';
import { formatAge, formatTimeLeft, renderTable } from '../format.ts';
import type { TrustHold, TrustStatusView } from '../trust-types.ts';

const PHASES: Readonly<Record<number, string>> = {
  0: 'steady',
  1: 'new root added to every bundle',
  2: 'intermediates re-signed by the new root',
  3: 'old root removed from bundles',
};

/** Adds `trust status` and `trust rotate`. */
export function addTrustCommands(program: Command, ctx: CliContext): void {
  const trust = program.command('trust').description('the mesh root, its rotation and each cluster’s intermediate CA');
  trust
    .command('status')
    .description('roots, rotation phase and what holds it, each cluster’s intermediate and workloads near expiry')
    .action(async (_flags: unknown, cmd: Command) => {
      const status = await ctx.client(cmd).trust();
      if (ctx.globals(cmd).output === 'json') return ctx.printJson(status);
      ctx.print(renderTrustStatus(status, ctx.now()));
    });
  trust
    .command('rotate')
    .description('start a rotation to a new generated mesh root (refused while one is under way)')
    .action(async (_flags: unknown, cmd: Command) => {
      const status = await ctx.client(cmd).rotateTrust();
      if (ctx.globals(cmd).output === 'json') return ctx.printJson(status);
      ctx.print(`Rotation started to root ${status.roots[status.roots.length - 1]?.id ?? '-'}.\n`);
      ctx.print(renderTrustStatus(status, ctx.now()));
    });
}

function describeHold(hold: TrustHold, now: Date): string {
  if (hold.kind === 'old-root-leaves')
    return `workload certificates issued under the old root, valid for ${formatTimeLeft(hold.until, now)} more (until ${hold.until})`;
  const applied = hold.appliedGeneration === 0 ? 'has not reported' : `applied generation ${hold.appliedGeneration}`;
  return `cluster ${hold.cluster} ${applied}, since ${hold.since} (for ${formatAge(hold.since, now)})`;
}

/** The text of `trust status`. */
export function renderTrustStatus(status: TrustStatusView, now: Date): string {
  const out: string[] = [];
  if (status.policy === undefined) out.push('Mesh trust is off: no RootTrustPolicy is in force.');
  else
    out.push(
      `Mesh trust from RootTrustPolicy ${status.policy.namespace}/${status.policy.name} (${status.policy.mgmtServerCa} root).`,
    );
  if (status.phase !== undefined)
    out.push(
      `Phase ${status.phase} (${PHASES[status.phase] ?? '?'}), generation ${status.generation ?? '-'}, since ${status.since ?? '-'} (for ${formatAge(status.since, now)}).`,
    );
  for (const hold of status.holds) out.push(`Held: ${describeHold(hold, now)}.`);
  for (const problem of status.problems) out.push(`Problem: ${problem}`);
  let text = out.join('\n') + '\n';
  if (status.roots.length > 0) {
    text +=
      '\n' +
      renderTable(
        ['ROOT', 'ORIGIN', 'EXPIRES', 'ROLE'],
        status.roots.map((r) => [
          r.id,
          r.origin,
          `${r.notAfter} (in ${formatTimeLeft(r.notAfter, now)})`,
          [r.id === status.signingRootId ? 'signs' : '', status.bundleRootIds?.includes(r.id) ? 'in bundles' : '']
            .filter((s) => s !== '')
            .join(', ') || '-',
        ]),
      );
  }
  if (status.clusters.length > 0) {
    const rows = status.clusters.map((c) => [
      c.cluster,
      c.phase === undefined ? '-' : String(c.phase),
      String(c.appliedGeneration),
      c.intermediate?.rootId ?? '-',
      c.intermediate?.notAfter === undefined ? '-' : `in ${formatTimeLeft(c.intermediate.notAfter, now)}`,
      String(c.workloads),
      c.reported ? `${formatAge(c.reportedAt, now)} ago` : 'never',
    ]);
    text +=
      '\n' +
      renderTable(['CLUSTER', 'PHASE', 'APPLIED', 'INTERMEDIATE ROOT', 'EXPIRES', 'WORKLOADS', 'REPORTED'], rows);
  }
  const near = status.clusters.flatMap((c) => c.workloadsNearExpiry.map((w) => [c.cluster, w.spiffeId, w.notAfter]));
  if (near.length > 0) {
    text +=
      '\nWorkloads near expiry:\n' +
      renderTable(
        ['CLUSTER', 'WORKLOAD', 'EXPIRES'],
        near.map(([cluster, id, notAfter]) => [cluster ?? '', id ?? '', `in ${formatTimeLeft(notAfter, now)}`]),
      );
  }
  return text;
}
