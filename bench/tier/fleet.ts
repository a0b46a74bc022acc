/**
 * The bench's side of the load generators: forks them, hands each its share of the clusters,
 * keeps every event they report, and waits for conditions on those events with a deadline.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { MeshrelayError } from '@meshrelay/api';
import type { WorkloadShape } from '../workload.ts';
import type { KindChange } from './change-kinds.ts';
import type { EndpointChange } from './endpoint-change.ts';
import type { LoadGeneratorCommand, LoadGeneratorEvent, LoadGeneratorPlan } from './load-generator.ts';
import { stopChild, type RegisteredCluster, type ServerProcess } from './processes.ts';

const LOAD_GENERATOR = fileURLToPath(new URL('./load-generator.ts', import.meta.url));

export type EventOf<T extends LoadGeneratorEvent['t']> = Extract<LoadGeneratorEvent, { t: T }>;

export class Fleet {
  readonly events: LoadGeneratorEvent[] = [];
  /** The server the agents talk to (replaced after a restart); a wait fails if it ends. */
  server: ServerProcess | undefined;
  readonly #children: ChildProcess[] = [];
  #exited: string | undefined;

  /** Forks `processes` load generators, clusters dealt round-robin; resolves once all generated their inputs. */
  static async start(options: {
    shape: WorkloadShape;
    address: string;
    caPem: string;
    clusters: readonly RegisteredCluster[];
    processes: number;
    signal: AbortSignal;
    skip?: ReadonlySet<string>;
  }): Promise<Fleet> {
    // Clusters in `skip` run real agents instead; the rest keep their index in the workload.
    const dealt = options.clusters
      .map((c, index) => ({ ...c, index }))
      .filter((c) => options.skip?.has(c.name) !== true);
    const fleet = new Fleet();
    for (let p = 0; p < options.processes; p++) {
      const clusters = dealt.filter((_, i) => i % options.processes === p);
      if (clusters.length === 0) continue;
      const plan: LoadGeneratorPlan = {
        shape: options.shape,
        address: options.address,
        caPem: options.caPem,
        clusters,
      };
      const child = fork(LOAD_GENERATOR, [], {
        env: { ...process.env, TIER_BENCH_PLAN: JSON.stringify(plan) },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      child.on('message', (event: LoadGeneratorEvent) => fleet.events.push(event));
      child.once('exit', (code, signal) => (fleet.#exited ??= `a load generator exited (${code ?? signal})`));
      fleet.#children.push(child);
    }
    try {
      await fleet.waitUntil(
        () => fleet.of('ready').length === fleet.#children.length,
        'every load generator generated its inputs',
        options.signal,
      );
    } catch (err) {
      // Nobody else holds the fleet yet: stop its processes, or they outlive the bench.
      await fleet.stop();
      throw err;
    }
    return fleet;
  }

  get processes(): number {
    return this.#children.length;
  }

  of<T extends LoadGeneratorEvent['t']>(t: T, after = 0): Array<EventOf<T>> {
    return this.events.filter((e): e is EventOf<T> => e.t === t && ('at' in e ? e.at >= after : true));
  }

  /** Another reason a wait must fail (e.g. a real agent process ended), checked with the others. */
  alsoWatch: (() => string | undefined) | undefined;

  /** Starts every relay client, or only those of `clusters`. */
  startClients(clusters?: readonly string[]): void {
    this.#broadcast(clusters === undefined ? { t: 'start' } : { t: 'start', clusters });
  }

  /** The owner of the cluster offers its input with `change` applied. */
  kindChange(change: KindChange): void {
    this.#broadcast({ t: 'kind-change', change });
  }

  /** Every load generator watches for the new address; the owner of the cluster pushes the changed snapshot. */
  change(change: EndpointChange): void {
    this.#broadcast({ t: 'change', change });
  }

  /**
   * Polls `condition` every 10 ms; throws naming `what` (a string, or one made at the moment, with progress) if the
   * signal aborts or a load generator exits first.
   */
  async waitUntil(condition: () => boolean, what: string | (() => string), signal: AbortSignal): Promise<void> {
    const describe = () => (typeof what === 'string' ? what : what());
    while (!condition()) {
      if (signal.aborted) throw new MeshrelayError('MESHRELAY_ERR_UNAVAILABLE', `stopped waiting until ${describe()}`);
      const serverEnded = this.server?.ended;
      if (serverEnded !== undefined)
        throw new MeshrelayError(
          'MESHRELAY_ERR_UNAVAILABLE',
          `meshrelay-server ${serverEnded} while waiting until ${describe()}`,
        );
      const other = this.alsoWatch?.();
      if (other !== undefined)
        throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `${other} while waiting until ${describe()}`);
      if (this.#exited !== undefined)
        throw new MeshrelayError('MESHRELAY_ERR_INTERNAL', `${this.#exited} while waiting until ${describe()}`);
      await sleep(10);
    }
  }

  async stop(): Promise<void> {
    for (const child of this.#children) if (child.connected) child.send({ t: 'stop' } satisfies LoadGeneratorCommand);
    const deadline = sleep(10_000).then(() => 'late' as const);
    for (const child of this.#children) {
      const exited = new Promise<'exited'>((r) =>
        child.exitCode !== null || child.signalCode !== null ? r('exited') : child.once('exit', () => r('exited')),
      );
      if ((await Promise.race([exited, deadline])) === 'late') await stopChild(child, 'SIGKILL');
    }
  }

  #broadcast(command: LoadGeneratorCommand): void {
    for (const child of this.#children) if (child.connected) child.send(command);
  }
}
