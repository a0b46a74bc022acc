import type { Command } from 'commander';
import { clusterArgument, type CliContext } from '../cli-context.ts';

/** Adds `output release CLUSTER`. */
export function addOutputCommands(program: Command, ctx: CliContext): void {
  const output = program.command('output').description('act on the output snapshots the blast-radius guard holds back');

  output
    .command('release')
    .description(
      'let the output held for a cluster go to its agent, deletions included (needs the admin token when the server has one)',
    )
    .addArgument(clusterArgument('cluster'))
    .action(async (cluster: string, _flags: unknown, cmd: Command) => {
      // Nothing held is the server's 404 MESHRELAY_ERR_SNAPSHOT_NOT_FOUND: one line, exit 1.
      const released = await ctx.client(cmd).releaseOutput(cluster);
      if (ctx.globals(cmd).output === 'json') return ctx.printJson({ released });
      ctx.print(
        `Released the output held for cluster "${cluster}": hash ${released.hash}, ` +
          `deleting ${released.deleted} of the ${released.held} resources its agent holds (held for: ${released.message}).`,
      );
    });
}

/** The command that releases the held output of `cluster`. */
export function releaseCommand(cluster: string): string {
  return `meshctl output release ${cluster}`;
}
