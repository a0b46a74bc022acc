import type { Command } from 'commander';
import type { SafeModeStatus } from '../api-types.ts';
import type { CliContext } from '../cli-context.ts';
import { formatAge, formatTimeLeft } from '../format.ts';

/** One way out of safe mode: what to do, and the commands that do it for each missing cluster. */
export interface WayOut {
  readonly action: string;
  readonly commands: readonly string[];
}

const OPEN_REASONS: Readonly<Record<string, string>> = {
  'all-required-present': 'every required cluster is present',
  'window-elapsed': 'the safe-start window elapsed',
  'no-wait': 'no safe-start window is configured',
  'already-open': 'the gate opened earlier on this replica and stays open while it runs',
};

const HELD_BY: Readonly<Record<string, string>> = {
  'safe-mode': 'safe mode',
  'safe-start-window': 'the safe-start window',
};

/** Adds `safe-mode status`. */
export function addSafeModeCommands(program: Command, ctx: CliContext): void {
  const safeMode = program
    .command('safe-mode')
    .description('inspect the safe-mode gate that holds translation after a start');

  safeMode
    .command('status')
    .description(
      'whether translation runs or is held, which clusters it waits for, and the ways out (exits 0 either way)',
    )
    .action(async (_flags: unknown, cmd: Command) => {
      const status = await ctx.client(cmd).safeMode();
      if (ctx.globals(cmd).output === 'json') return ctx.printJson(status);
      ctx.print(renderSafeMode(status, ctx.now()));
    });
}

/**
 * The server's ways out with "NAME" filled in: a way of the form
 * "what to do: command NAME" becomes that action with one command per missing
 * cluster; a way without NAME is kept as it is.
 */
export function fillWaysOut(waysOut: readonly string[], missing: readonly string[]): WayOut[] {
  return waysOut.map((way) => {
    const match = /^(.*?):\s+(\S.*\bNAME\b.*)$/.exec(way);
    if (match?.[1] !== undefined && match[2] !== undefined) {
      const command = match[2];
      return { action: match[1], commands: missing.map((name) => command.replace(/\bNAME\b/g, name)) };
    }
    return { action: way, commands: [] };
  });
}

/** A way out on one line: "action: command, command". */
export function wayOutLine(way: WayOut): string {
  return way.commands.length === 0 ? way.action : `${way.action}: ${way.commands.join(', ')}`;
}

/** Why translation runs, or what holds it and since when; one line. */
export function describeGate(status: SafeModeStatus, now: Date): string {
  if (!status.active) {
    const reason = status.openReason ?? 'unknown';
    return `translation is running: ${OPEN_REASONS[reason] ?? reason} (${reason})`;
  }
  const by = HELD_BY[status.mode ?? ''] ?? status.mode ?? 'the safe-mode gate';
  const since = status.since === null ? '' : ` since ${status.since} (for ${formatAge(status.since, now)})`;
  return `translation is HELD by ${by}${since}`;
}

/** The text of `safe-mode status`. */
export function renderSafeMode(status: SafeModeStatus, now: Date): string {
  const lines = [`${capitalize(describeGate(status, now))}.`];
  if (!status.active) {
    if (status.missing.length > 0)
      lines.push(`Left out because their inputs are missing: ${status.missing.join(', ')}`);
    return lines.join('\n') + '\n';
  }
  lines.push(`Missing clusters: ${status.missing.length > 0 ? status.missing.join(', ') : 'none'}`);
  if (status.windowEndsAt !== null) {
    lines.push(
      `Window ends at: ${status.windowEndsAt} (in ${formatTimeLeft(status.windowEndsAt, now)}); then translation runs without the missing clusters.`,
    );
  } else if (status.mode === 'safe-mode') {
    lines.push(
      'Safe mode has no timeout: translation resumes once every missing cluster is present or taken out of the warm set.',
    );
  }
  if (status.missing.length > 0 && status.waysOut.length > 0) {
    lines.push('Ways out:');
    for (const way of fillWaysOut(status.waysOut, status.missing)) lines.push(...wayOutLines(way));
  }
  return lines.join('\n') + '\n';
}

function wayOutLines(way: WayOut): string[] {
  if (way.commands.length <= 1) return [`  - ${wayOutLine(way)}`];
  return [`  - ${way.action}:`, ...way.commands.map((c) => `      ${c}`)];
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
