import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import type { CliContext } from '../cli-context.ts';

/** Adds `dashboard [--no-browser]`. */
export function addDashboardCommand(program: Command, ctx: CliContext): void {
  program
    .command('dashboard')
    .description("print the web UI's address and open it in a browser")
    .option('--no-browser', 'only print the address')
    .action((flags: { browser: boolean }, cmd: Command) => {
      const url = `${ctx.globals(cmd).server}/`;
      if (flags.browser) (ctx.io.openBrowser ?? launchBrowser)(url);
      if (ctx.globals(cmd).output === 'json') return ctx.printJson({ url, openBrowser: flags.browser });
      ctx.print(`Meshrelay UI: ${url}`);
    });
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
