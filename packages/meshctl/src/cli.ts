import { createRequire } from 'node:module';
import { Command, CommanderError } from 'commander';
import { MeshrelayError } from '@meshrelay/api';
import { CliContext, GLOBAL_ENV, addGlobalOptions, type MeshctlIo } from './cli-context.ts';
import { addCheckCommand } from './commands/check.ts';
import { addClusterCommands } from './commands/cluster.ts';
import { addDashboardCommand } from './commands/dashboard.ts';
import { addDebugCommands } from './commands/debug.ts';
import { addGetCommand } from './commands/get.ts';
import { addInterestCommands } from './commands/interest.ts';
import { addOutputCommands } from './commands/output.ts';
import { addSafeModeCommands } from './commands/safe-mode.ts';
import { addSnapshotCommands } from './commands/snapshot.ts';
import { addTrustCommands } from './commands/trust.ts';
import { addXdsCommands } from './commands/xds.ts';
import { ApiError, describeFailure } from './http-client.ts';

/**
 * Exit codes: 0 success, 1 the server or the machine failed the request (or a check failed), 2 the command line is
 * wrong.
 */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

const VERSION = (createRequire(import.meta.url)('../package.json') as { version: string }).version;

/**
 * Runs one meshctl command line (without the node and script entries) and
 * resolves with its exit code; never throws and never exits the process.
 * Results go to io.stdout; every failure is exactly one "meshctl: …" line on
 * io.stderr. Usage errors are found before the server is contacted. A command
 * whose answer is a problem report (`check`) prints it and exits 1 without an
 * error line.
 */
export async function runMeshctl(argv: readonly string[], io: MeshctlIo): Promise<number> {
  // Commander writes to stderr only to show help after a missing command; it is
  // held back so that failure, too, is a single line.
  let heldHelp = '';
  const ctx = new CliContext(io);
  const program = buildProgram(ctx, (text) => (heldHelp += text));
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return ctx.exitCode;
  } catch (err) {
    return reportFailure(err, io, heldHelp);
  }
}

function buildProgram(ctx: CliContext, holdHelp: (text: string) => void): Command {
  const { io } = ctx;
  const program = new Command('meshctl')
    .description('Operate a Meshrelay management plane through its HTTP API.')
    .version(VERSION)
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: holdHelp,
      outputError: () => {},
    })
    .showSuggestionAfterError(true);
  addGlobalOptions(program);
  program.addHelpText(
    'after',
    `\nEnvironment: ${Object.values(GLOBAL_ENV).join(', ')} set the global options; a flag wins over its variable.\n` +
      `Exit codes: ${EXIT_OK} success, ${EXIT_FAILURE} server or API error or a failed check, ${EXIT_USAGE} usage error.`,
  );
  addClusterCommands(program, ctx);
  addCheckCommand(program, ctx);
  addGetCommand(program, ctx);
  addSafeModeCommands(program, ctx);
  addOutputCommands(program, ctx);
  addSnapshotCommands(program, ctx);
  addDashboardCommand(program, ctx);
  addXdsCommands(program, ctx);
  addTrustCommands(program, ctx);
  addInterestCommands(program, ctx);
  addDebugCommands(program, ctx, VERSION);
  return program;
}

function reportFailure(err: unknown, io: MeshctlIo, heldHelp: string): number {
  const fail = (message: string, code: number): number => {
    io.stderr.write(`meshctl: ${message.replace(/\s*\n\s*/g, ' ').trim()}\n`);
    return code;
  };
  if (err instanceof CommanderError) {
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return EXIT_OK;
    if (err.code === 'commander.help') {
      // A command group run without a command: point at its help instead of printing it.
      const group = /^Usage: (.+?) \[options\]/.exec(heldHelp)?.[1] ?? 'meshctl';
      return fail(`missing command: see "${group} --help"`, EXIT_USAGE);
    }
    return fail(err.message.replace(/^error: /, ''), EXIT_USAGE);
  }
  if (err instanceof ApiError) return fail(describeFailure(err), EXIT_FAILURE);
  if (err instanceof MeshrelayError) {
    return fail(err.message, err.code === 'MESHRELAY_ERR_INVALID_ARGUMENT' ? EXIT_USAGE : EXIT_FAILURE);
  }
  return fail(err instanceof Error ? err.message : String(err), EXIT_FAILURE);
}
