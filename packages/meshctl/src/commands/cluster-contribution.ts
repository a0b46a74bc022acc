import type { Command } from 'commander';
import { clusterArgument, type CliContext } from '../cli-context.ts';

/**
 * Adds `cluster forget-contribution NAME`: lets the last known contribution of
 * an absent cluster go, so the next outputs are built without it (DESIGN §13).
 */
export function addForgetContributionCommand(cluster: Command, ctx: CliContext): void {
  cluster
    .command('forget-contribution')
    .description(
      "stop carrying an absent cluster's last known contribution (its endpoints, hosts and resources leave every output)",
    )
    .addArgument(clusterArgument())
    .action(async (name: string, _flags: unknown, cmd: Command) => {
      // Nothing kept is the server's 404 MESHRELAY_ERR_SNAPSHOT_NOT_FOUND: one line, exit 1.
      const released = await ctx.client(cmd).forgetContribution(name);
      if (ctx.globals(cmd).output === 'json') return ctx.printJson({ released });
      ctx.print(
        `Released the contribution of cluster "${name}" (input ${released.inputHash}): the next outputs are built without it.`,
      );
    });
}
