import Fastify, { type FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import type { InputProblem } from './input-problem.ts';
import type { RelayClientStatus } from './relay-client.ts';

/** What /status reports; built fresh on every request. */
export interface AgentStatus {
  readonly cluster: string;
  readonly relay: RelayClientStatus;
  readonly input: { readonly epoch: string; readonly generation: number; readonly hash: string; readonly resources: number } | undefined;
  readonly heldOutputHash: string;
  readonly problems: readonly InputProblem[];
  readonly leadership: LeadershipStatus;
}

export interface LeadershipStatus {
  /** `none`, `file` or `kubernetes` (--leader-election). */
  readonly mode: string;
  /** This replica's identity in the lease. */
  readonly replica: string;
  readonly leader: boolean;
  /** The lease holder last seen, if any. */
  readonly holder: string | undefined;
}

export interface HealthServerOptions {
  readonly port: number;
  readonly host?: string;
  readonly status: () => AgentStatus;
  readonly registry: Registry;
}

/**
 * The agent's HTTP surface: /healthz (the process runs), /readyz (the leader:
 * a snapshot was pushed and accepted; a follower: always, since it serves the
 * access-log sink), /status (JSON), /metrics (Prometheus).
 */
export class HealthServer {
  readonly #opts: HealthServerOptions;
  readonly #app: FastifyInstance;
  #port: number | undefined;

  constructor(options: HealthServerOptions) {
    this.#opts = options;
    this.#app = Fastify({ logger: false });
    this.#routes();
  }

  /** The bound port (after start), useful with port 0. */
  get port(): number {
    if (this.#port === undefined) throw new Error('health server not started');
    return this.#port;
  }

  async start(): Promise<void> {
    await this.#app.listen({ port: this.#opts.port, host: this.#opts.host ?? '0.0.0.0' });
    const address = this.#app.server.address();
    this.#port = typeof address === 'object' && address !== null ? address.port : this.#opts.port;
  }

  async stop(): Promise<void> {
    await this.#app.close();
  }

  /** In-process requests for tests. */
  get app(): FastifyInstance {
    return this.#app;
  }

  #routes(): void {
    this.#app.get('/healthz', async () => ({ status: 'ok' }));
    this.#app.get('/readyz', async (_req, reply) => {
      const { relay, leadership } = this.#opts.status();
      if (!leadership.leader) return { status: 'ready', role: 'follower' };
      if (relay.everAccepted) return { status: 'ready' };
      return reply.code(503).send({ status: 'not ready', reason: relay.lastPushed ? 'no snapshot accepted by a management server yet' : 'no snapshot pushed yet' });
    });
    this.#app.get('/status', async () => {
      const s = this.#opts.status();
      return {
        cluster: s.cluster,
        replica: s.leadership.replica,
        leaderElection: s.leadership.mode,
        leader: s.leadership.leader,
        leaderHolder: s.leadership.holder ?? null,
        serverAddress: s.relay.address ?? null,
        pushConnected: s.relay.pushConnected,
        pullConnected: s.relay.pullConnected,
        input: s.input ?? null,
        lastPushed: s.relay.lastPushed ?? null,
        lastAcked: s.relay.lastAcked ?? null,
        heldOutputHash: s.heldOutputHash,
        certificateNotAfter: s.relay.certificateNotAfter ?? null,
        lastError: s.relay.lastError ?? null,
        problems: s.problems,
      };
    });
    this.#app.get('/metrics', async (_req, reply) => {
      const body = await this.#opts.registry.metrics();
      return reply.type(this.#opts.registry.contentType).send(body);
    });
  }
}
