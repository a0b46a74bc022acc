import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { MeshrelayError } from '@meshrelay/api';
import { http } from './node-http.ts';
import type { InputProblem } from './discovery/input-problem.ts';
import type { RelayClientStatus } from './relay/relay-client.ts';
import type { MeshTrustStatus } from './trust/mesh-trust-client.ts';

/** What /status reports; built fresh on every request. */
export interface AgentStatus {
  readonly cluster: string;
  readonly relay: RelayClientStatus;
  readonly input:
    | { readonly epoch: string; readonly generation: number; readonly hash: string; readonly resources: number }
    | undefined;
  readonly heldOutputHash: string;
  /** Absent with `--trust-interval 0`. */
  readonly meshTrust?: MeshTrustStatus;
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
  /** What `GET /xds/proxies` lists: the proxies on the agent's ADS server (empty when it is off). */
  readonly xdsProxies?: () => readonly unknown[];
  /** What `GET /xds/findings` lists: what the xDS translation could not give gRPC clients. */
  readonly xdsFindings?: () => readonly unknown[];
}

/**
 * The agent's HTTP surface: /healthz (the process runs), /readyz (the leader:
 * a snapshot was pushed and accepted; a follower: always, since it serves the
 * access-log sink), /status (JSON; names files and fields of input problems,
 * never their contents), /metrics (Prometheus). GET only. Plain node:http: four
 * read-only routes do not need a framework, and every agent saves its memory.
 */
export class HealthServer {
  readonly #opts: HealthServerOptions;
  readonly #server: Server;
  #port: number | undefined;

  constructor(options: HealthServerOptions) {
    this.#opts = options;
    this.#server = http.createServer((req, res) => {
      this.#handle(req, res).catch(() => send(res, 500, { error: 'internal error' }));
    });
  }

  /** The bound port (after start), useful with port 0. */
  get port(): number {
    if (this.#port === undefined) throw new Error('health server not started');
    return this.#port;
  }

  /** The bound address (after start). */
  get address(): AddressInfo {
    const address = this.#server.address();
    if (address === null || typeof address !== 'object') throw new Error('health server not started');
    return address;
  }

  /**
   * Listens on host:port. Throws MESHRELAY_ERR_INVALID_CONFIG when it cannot (e.g. the port is in use, the address is
   * not local).
   */
  async start(): Promise<void> {
    const host = this.#opts.host ?? '0.0.0.0';
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#opts.port, host, () => {
        this.#server.off('error', reject);
        resolve();
      });
    }).catch((err: unknown) => {
      throw new MeshrelayError(
        'MESHRELAY_ERR_INVALID_CONFIG',
        `--health-host/--health-port: cannot listen on ${host}:${this.#opts.port}: ${(err as Error).message}`,
        { cause: err },
      );
    });
    this.#port = this.address.port;
  }

  /** Stops listening and closes open connections; idempotent. */
  async stop(): Promise<void> {
    if (!this.#server.listening) return;
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const route = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, { error: 'method not allowed' });
    switch (route) {
      case '/healthz':
        return send(res, 200, { status: 'ok' });
      case '/readyz':
        return this.#ready(res);
      case '/status':
        return send(res, 200, statusBody(this.#opts.status()));
      case '/xds/proxies':
        return send(res, 200, this.#opts.xdsProxies?.() ?? []);
      case '/xds/findings':
        return send(res, 200, this.#opts.xdsFindings?.() ?? []);
      case '/metrics': {
        const body = await this.#opts.registry.metrics();
        res.writeHead(200, { 'content-type': this.#opts.registry.contentType });
        res.end(body);
        return;
      }
      default:
        return send(res, 404, { error: `no route ${route ?? ''}` });
    }
  }

  #ready(res: ServerResponse): void {
    const { relay, leadership } = this.#opts.status();
    if (!leadership.leader) return send(res, 200, { status: 'ready', role: 'follower' });
    if (relay.everAccepted) return send(res, 200, { status: 'ready' });
    send(res, 503, {
      status: 'not ready',
      reason: relay.lastPushed ? 'no snapshot accepted by a management server yet' : 'no snapshot pushed yet',
    });
  }
}

function statusBody(s: AgentStatus): Record<string, unknown> {
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
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
