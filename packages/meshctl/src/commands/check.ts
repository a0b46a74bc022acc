import type { Command } from 'commander';
import type {
  ClusterView,
  HeldOutput,
  ReadyResponse,
  ResourceView,
  SafeModeStatus,
  ServerStatus,
} from '../api-types.ts';
import type { CliContext } from '../cli-context.ts';
import { formatAge, formatTimeLeft, shortHash } from '../format.ts';
import { describeFailure, type ApiClient } from '../http-client.ts';
import { releaseCommand } from './output.ts';
import { describeGate, fillWaysOut, wayOutLine } from './safe-mode.ts';

/** One verdict of `meshctl check`. */
export interface CheckResult {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
  /** A passed check that still deserves a look (printed as [warn]; the exit code stays 0). */
  readonly warn?: boolean;
}

/** Every verdict, and whether all of them passed. */
export interface CheckReport {
  readonly ok: boolean;
  readonly checks: readonly CheckResult[];
}

/** A call's answer, or the one line describing why it failed. */
type Outcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

const SKIP_WARMING_NOTE = 'skip-warming is set, so translation does not wait for it';

/** Adds `check`: exit 0 only when every check passes. */
export function addCheckCommand(program: Command, ctx: CliContext): void {
  program
    .command('check')
    .description(
      'check the server, its store, each registered cluster (connected, warm), safe mode, held outputs and Gloo resource approvals; exit 1 on any problem',
    )
    .action(async (_flags: unknown, cmd: Command) => {
      const report = await runChecks(ctx.client(cmd), ctx.now());
      if (ctx.globals(cmd).output === 'json') ctx.printJson(report);
      else ctx.print(renderCheckReport(report));
      if (!report.ok) ctx.setExitCode(1); // EXIT_FAILURE without an error line: the report is the answer
    });
}

/**
 * Runs every check against one replica. Never rejects: a call that fails
 * turns into a failed check naming the error. When /healthz cannot be reached
 * only that check is reported, since every other one would fail the same way.
 * `now` is the clock ages are measured against.
 */
export async function runChecks(client: ApiClient, now: Date = new Date()): Promise<CheckReport> {
  const health = await settle(client.health());
  if (!health.ok) return report([{ name: 'server reachable', ok: false, detail: health.error }]);
  const replica = health.value.replica;
  const [ready, status, clusters, safeMode, held, resources] = await Promise.all([
    settle(client.ready()),
    settle(client.status()),
    settle(client.listClusters()),
    settle(client.safeMode()),
    settle(client.heldOutputs()),
    settle(client.listResources()),
  ]);
  return report([
    { name: 'server reachable', ok: true, detail: `${client.server} answers (replica ${replica})` },
    readyCheck(ready),
    storeCheck(status),
    ...workspacesCheck(status),
    ...clusterChecks(clusters, replica, now),
    safeModeCheck(safeMode, now),
    ...heldChecks(held, now),
    resourcesCheck(resources),
  ]);
}

/** One "[ok]"/"[FAIL]" line per check, then a summary line. */
export function renderCheckReport(r: CheckReport): string {
  const lines = r.checks.map(
    (c) => `${(c.ok ? (c.warn ? '[warn]' : '[ok]') : '[FAIL]').padEnd(6)} ${c.name}: ${c.detail}`,
  );
  const failed = r.checks.filter((c) => !c.ok).length;
  const total = r.checks.length;
  const warned = r.checks.filter((c) => c.ok && c.warn).length;
  const warnings = warned === 0 ? '' : ` (${warned} with a warning)`;
  lines.push(failed === 0 ? `All ${total} checks passed${warnings}.` : `${failed} of ${total} checks failed.`);
  return lines.join('\n') + '\n';
}

function report(checks: readonly CheckResult[]): CheckReport {
  return { ok: checks.every((c) => c.ok), checks };
}

async function settle<T>(call: Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await call };
  } catch (err) {
    return { ok: false, error: describeFailure(err) };
  }
}

function readyCheck(ready: Outcome<ReadyResponse>): CheckResult {
  const name = 'server ready';
  if (!ready.ok) return { name, ok: false, detail: ready.error };
  if (ready.value.ready) return { name, ok: true, detail: `replica ${ready.value.replica} is ready` };
  return {
    name,
    ok: false,
    detail: `replica ${ready.value.replica} answers /readyz with not ready (it is draining): agents are told to move elsewhere`,
  };
}

function storeCheck(status: Outcome<ServerStatus>): CheckResult {
  const name = 'store';
  if (!status.ok) return { name, ok: false, detail: status.error };
  const { backend, redisUp, pendingWriteBack } = status.value.store;
  if (backend === 'memory')
    return { name, ok: true, detail: 'memory only (no Redis: inputs are not shared between replicas)' };
  const pending =
    pendingWriteBack > 0
      ? `; ${pendingWriteBack} ${pendingWriteBack === 1 ? 'snapshot waits' : 'snapshots wait'} to be written back`
      : '';
  if (!redisUp)
    return { name, ok: false, detail: `Redis is configured but down: this replica translates from memory${pending}` };
  return { name, ok: true, detail: `Redis is up${pending}` };
}

/**
 * Names the implicit global workspace as such: a warning, not a failure, since it is the
 * default and a single-team mesh may want it; the operator should know what it allows.
 */
function workspacesCheck(status: Outcome<ServerStatus>): CheckResult[] {
  const name = 'workspaces';
  if (!status.ok || status.value.workspaces === undefined) return [];
  const { mode, names, notice, source, problems = [] } = status.value.workspaces;
  const invalid = problems.length === 0 ? '' : `; ${problems.length} invalid: ${problems.join('; ')}`;
  const how =
    source === 'kubernetes'
      ? 'apply Workspace CRs in the management namespace'
      : 'define Workspaces with --workspaces-file';
  if (mode === 'implicit-global')
    return [
      {
        name,
        ok: true,
        warn: true,
        detail: `implicit global workspace: ${notice ?? 'no Workspace is defined'}; ${how} to scope each team${invalid}`,
      },
    ];
  return [
    {
      name,
      ok: true,
      ...(invalid === '' ? {} : { warn: true }),
      detail: `${names.length} defined (${names.join(', ')})${invalid}`,
    },
  ];
}

function clusterChecks(clusters: Outcome<ClusterView[]>, replica: string, now: Date): CheckResult[] {
  if (!clusters.ok) return [{ name: 'clusters', ok: false, detail: clusters.error }];
  if (clusters.value.length === 0)
    return [{ name: 'clusters', ok: true, detail: 'none registered (meshctl cluster register NAME)' }];
  const sorted = [...clusters.value].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return sorted.flatMap((c) => [connectedCheck(c, replica, now), warmCheck(c), ...tokenReuseCheck(c)]);
}

/** Listed only while the cluster's relay token was presented with a second key (refused). */
function tokenReuseCheck(c: ClusterView): CheckResult[] {
  if (c.relayTokenReuse === null || c.relayTokenReuse === undefined) return [];
  return [
    {
      name: `cluster ${c.name} relay token`,
      ok: false,
      detail: `presented with a second key since ${c.relayTokenReuse.since}: ${c.relayTokenReuse.message}`,
    },
  ];
}

function connectedCheck(c: ClusterView, replica: string, now: Date): CheckResult {
  const name = `cluster ${c.name} connected`;
  const { push, pull, disconnectedSince } = c.connection;
  if (push + pull > 0) {
    const missing =
      push === 0
        ? '; no push stream: its inputs are not updated'
        : pull === 0
          ? '; no pull stream: it receives no outputs'
          : '';
    return { name, ok: true, detail: `streams open on replica ${replica}: ${push} push, ${pull} pull${missing}` };
  }
  const notes = [
    disconnectedSince === null
      ? `no agent stream is open on replica ${replica}, and none was since it started`
      : `no agent stream is open on replica ${replica} since ${disconnectedSince} (${formatAge(disconnectedSince, now)} ago)`,
  ];
  if (c.input !== null) notes.push(`its last input ${shortHash(c.input.hash)} is kept and still translated`);
  if (c.skipWarming) notes.push(SKIP_WARMING_NOTE);
  return { name, ok: false, detail: notes.join('; ') };
}

function warmCheck(c: ClusterView): CheckResult {
  const name = `cluster ${c.name} warm`;
  const reason = c.warm.reason === '' ? '' : ` (${c.warm.reason})`;
  if (c.warm.status === 'True')
    return {
      name,
      ok: true,
      detail: `ClusterWarm=True${reason}${c.warm.since === null ? '' : ` since ${c.warm.since}`}`,
    };
  const detail = `ClusterWarm=${c.warm.status}${reason}: no input snapshot has been received from it yet`;
  return { name, ok: false, detail: c.skipWarming ? `${detail}; ${SKIP_WARMING_NOTE}` : detail };
}

function safeModeCheck(safeMode: Outcome<SafeModeStatus>, now: Date): CheckResult {
  const name = 'safe mode';
  if (!safeMode.ok) return { name, ok: false, detail: safeMode.error };
  const s = safeMode.value;
  const parts = [describeGate(s, now)];
  if (!s.active) {
    if (s.missing.length > 0) parts.push(`left out because their inputs are missing: ${s.missing.join(', ')}`);
    return { name, ok: true, detail: parts.join('; ') };
  }
  parts.push(`missing: ${s.missing.length > 0 ? s.missing.join(', ') : 'none'}`);
  if (s.windowEndsAt !== null)
    parts.push(`the window ends at ${s.windowEndsAt} (in ${formatTimeLeft(s.windowEndsAt, now)})`);
  if (s.missing.length > 0 && s.waysOut.length > 0) {
    parts.push(`ways out: ${fillWaysOut(s.waysOut, s.missing).map(wayOutLine).join('; ')}`);
  }
  return { name, ok: false, detail: parts.join('; ') };
}

function heldChecks(held: Outcome<HeldOutput[]>, now: Date): CheckResult[] {
  if (!held.ok) return [{ name: 'held outputs', ok: false, detail: held.error }];
  if (held.value.length === 0) return [{ name: 'held outputs', ok: true, detail: 'none' }];
  return held.value.map((h) => ({
    name: `output of ${h.cluster}`,
    ok: false,
    detail: `held since ${h.since} (${formatAge(h.since, now)}): ${h.message} (hash ${shortHash(h.hash)}); release it with: ${releaseCommand(h.cluster)}`,
  }));
}

/** Fails while any Gloo resource is INVALID or FAILED, naming each with its message. */
function resourcesCheck(resources: Outcome<ResourceView[]>): CheckResult {
  const name = 'resources';
  if (!resources.ok) return { name, ok: false, detail: resources.error };
  const bad = resources.value.filter((r) => r.approval === 'INVALID' || r.approval === 'FAILED');
  const warned = resources.value.filter((r) => r.approval === 'WARNING').length;
  const note = warned === 0 ? '' : `; ${warned} with warnings (meshctl get KIND)`;
  if (bad.length === 0)
    return { name, ok: true, detail: `${resources.value.length} Gloo resources, none INVALID or FAILED${note}` };
  const named = bad.map((r) => `${r.kind} ${r.namespace}/${r.name} in ${r.cluster} is ${r.approval}: ${r.message}`);
  return {
    name,
    ok: false,
    detail: `${bad.length} of ${resources.value.length} Gloo resources are not applied as written: ${named.join('; ')}`,
  };
}
