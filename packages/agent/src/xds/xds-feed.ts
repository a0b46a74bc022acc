import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Resource } from '@meshrelay/api';
import type { MeshTls, XdsFinding } from '@meshrelay/xds';
import { AdsServer } from './ads-server.ts';
import type { ProxyStatus } from './ads-stream.ts';

export interface XdsFeedOptions {
  readonly cluster: string;
  readonly port: number;
  readonly host: string;
  readonly socket?: string;
  readonly registry: Registry;
  readonly logger: Logger;
}

/**
 * Feeds the ADS server from what the agent holds: the applied output (restored at
 * start, so proxies are served while the relay is down) and the cluster's own
 * discovered Services, EndpointSlices, Pods and Nodes. Off unless a port or a socket is set.
 */
export class XdsFeed {
  readonly #opts: XdsFeedOptions;
  readonly #server: AdsServer | undefined;
  #output: readonly Resource[] = [];
  #discovered: readonly Resource[] = [];
  #meshTls: MeshTls | undefined;
  /** No config is served before the cluster's own workloads are known: a partial one would say hosts do not exist. */
  #haveDiscovered = false;

  constructor(opts: XdsFeedOptions) {
    this.#opts = opts;
    const enabled = opts.port !== 0 || opts.socket !== undefined;
    this.#server = enabled
      ? new AdsServer({
          ...(opts.port !== 0 ? { port: opts.port, host: opts.host } : {}),
          ...(opts.socket !== undefined ? { socket: opts.socket } : {}),
          registry: opts.registry,
          logger: opts.logger,
        })
      : undefined;
  }

  get server(): AdsServer | undefined {
    return this.#server;
  }

  async start(): Promise<void> {
    await this.#server?.start();
  }

  async stop(): Promise<void> {
    await this.#server?.stop();
  }

  /** A new applied output (or the one restored at start). */
  output(resources: readonly Resource[]): void {
    this.#output = resources;
    this.#refresh();
  }

  /** A new discovered snapshot of the cluster. */
  discovered(resources: readonly Resource[]): void {
    this.#discovered = resources;
    this.#haveDiscovered = true;
    this.#refresh();
  }

  /**
   * Mesh trust for the cluster's workloads: with a trust domain, mesh destinations are called over
   * mTLS and XdsServer backends serve TLS (their certificates come from the agent); undefined
   * turns that off. Until called, xDS is plaintext.
   */
  meshTls(state: MeshTls | undefined): void {
    if (state?.trustDomain === this.#meshTls?.trustDomain && state?.rootNamespace === this.#meshTls?.rootNamespace)
      return;
    this.#meshTls = state;
    this.#refresh();
  }

  /** What the current config's translation could not give gRPC clients (logged as `xds findings` too). */
  findings(): readonly XdsFinding[] {
    return this.#server?.config.findings ?? [];
  }

  proxies(): ProxyStatus[] {
    return this.#server?.proxies() ?? [];
  }

  /** Whether proxies can connect at all (a port or a socket is set). */
  get serving(): boolean {
    return this.#server !== undefined;
  }

  /** See AdsServer.onChange; never called when the server is off. */
  onChange(listener: () => void): () => void {
    return this.#server?.onChange(listener) ?? (() => {});
  }

  /** See AdsServer.setLeading. */
  leading(leading: boolean): void {
    this.#server?.setLeading(leading);
  }

  #refresh(): void {
    if (this.#server === undefined || !this.#haveDiscovered) return;
    try {
      this.#server.updateFrom({
        cluster: this.#opts.cluster,
        output: this.#output,
        discovered: this.#discovered,
        ...(this.#meshTls !== undefined ? { meshTls: this.#meshTls } : {}),
      });
    } catch (err) {
      // A translation failure keeps the last good config served; the next input retries.
      this.#opts.logger.error({ err }, 'xds translation failed; the last good config stays served');
    }
  }
}
