import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { MeshrelayError } from '@meshrelay/api';
import type { CliContext } from '../cli-context.ts';

/** Adds `dashboard [--no-browser]`. */
export function addDashboardCommand(program: Command, ctx: CliContext): void {
  program
    .command('dashboard')
    .description("print the web UI's address and open it in a browser")
    .option('--no-browser', 'only print the address')
    .action((flags: { browser: boolean }, cmd: Command) => {
      const url = `${ctx.globals(cmd).server}/`;
      const token = tokenLocation(ctx, cmd);
      if (flags.browser) (ctx.io.openBrowser ?? launchBrowser)(url);
      if (ctx.globals(cmd).output === 'json')
        return ctx.printJson({ url, openBrowser: flags.browser, adminTokenFrom: token.source });
      ctx.print(`Meshrelay UI: ${url}\n${token.text}`);
    });
}

/** Where the UI's sign-in token is (never its value): the UI asks for it once per browser tab. */
function tokenLocation(ctx: CliContext, cmd: Command): { source: string | null; text: string } {
  try {
    const { source } = ctx.adminCredential(cmd);
    return { source, text: `Sign in with the admin token from ${source}.` };
  } catch (err) {
    if (!(err instanceof MeshrelayError) || err.code !== 'MESHRELAY_ERR_UNAUTHENTICATED') throw err;
    return { source: null, text: `The UI asks for the server's admin token; ${err.message}.` };
  }
}

/**
 * Asks the desktop to open `url` (`open` on macOS, `xdg-open` elsewhere) and
 * does not wait: the opener runs detached, and a missing opener or a failure
 * is ignored, since the address is printed anyway.
 */
export function launchBrowser(url: string): void {
  const opener = process.platform === 'darwin' ? 'open' : 'xdg-open';
  try {
    const child = spawn(opener, [url], { detached: true, stdio: 'ignore' });
    child.on('error', () => {});
    child.unref();
  } catch {
    // spawn throws synchronously only for bad arguments; the address is printed either way.
  }
}
