// A TEST DOUBLE of kube-apiserver: a plain-HTTP node:http server on 127.0.0.1 that speaks enough
// of the Kubernetes REST API for @kubernetes/client-node (typed APIs, KubernetesObjectApi,
// CustomObjectsApi, Watch, makeInformer) to run against it in tests, since no real API server can
// run on the build machines.
//
// What it does, like the real one: discovery documents (/api, /apis, /api/v1, /apis/{g}/{v});
// namespaced, cluster-scoped and all-namespaces paths for the types in fake-kube-resource-types.ts;
// get, list (labelSelector, fieldSelector metadata.name/namespace, limit/continue), watch from a
// resourceVersion (410 Expired when older than the retained history), create (409 AlreadyExists,
// 404 for a missing namespace), replace (409 Conflict on a stale resourceVersion; custom resources
// require one), patch (merge, strategic-as-merge, JSON patch, server-side apply), delete (404,
// preconditions, finalizers, ownerReferences garbage collection), the /status subresource, one
// global resourceVersion counter, Status bodies with the real codes and reasons.
//
// What it does NOT do: TLS, authentication, authorization/RBAC, admission (no defaulting, no
// validation against CRD schemas or built-in type schemas), CRD registration (the type table is
// fixed at start), server-side apply field ownership conflicts (`force` is accepted and changes
// nothing), strategic merge keys (strategic patches merge like JSON merge patches), consistent
// snapshots for paginated lists (each page reads current state), dryRun, protobuf, deletecollection,
// and the asynchrony of garbage collection (dependents go in the same write here).

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse as parseYaml } from 'yaml';
import { FakeKubePatchError } from './fake-kube-patch.ts';
import {
  FAKE_KUBE_RESOURCE_TYPES,
  FakeKubeResourceTypeTable,
  type FakeKubeResourceType,
} from './fake-kube-resource-types.ts';
import { FakeKubeSelectorError, type FakeKubeObject } from './fake-kube-selectors.ts';
import { FakeKubeStatusError, reasonForCode } from './fake-kube-status.ts';
import { FakeKubeStore } from './fake-kube-store.ts';
import { FakeKubeRouter } from './fake-kube-router.ts';
import { FakeKubeWatchHub } from './fake-kube-watch.ts';

export interface FakeKubeApiServerOptions {
  /** Events retained for watches from an older resourceVersion (default 1000); older → 410. */
  readonly historySize?: number;
  /** Namespaces that exist at start (default default, kube-system, kube-public, gloo-mesh, istio-system). */
  readonly namespaces?: readonly string[];
  /** Rows added to FAKE_KUBE_RESOURCE_TYPES. */
  readonly extraResourceTypes?: readonly FakeKubeResourceType[];
  /** Interval of BOOKMARK events for watches that ask for them (default 0: none). */
  readonly bookmarkIntervalMs?: number;
  /**
   * How a watch from an expired resourceVersion is answered: 'event' (default, as kube-apiserver
   * does: HTTP 200 with one ERROR event carrying the 410 Status) or 'status' (an HTTP 410 response).
   */
  readonly expiredWatchAs?: 'event' | 'status';
}

/** What put() accepts: any object with apiVersion, kind and metadata (interfaces need no index signature). */
export interface FakeKubeObjectInput {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: object;
}

/** One request as the fake server saw it. */
export interface FakeKubeRequest {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly contentType: string | undefined;
  /** The parsed body, if any. */
  body: unknown;
  /** The HTTP status answered (0 while a watch stream is being set up). */
  status: number;
}

/** What `KubeConfig.loadFromOptions` takes (kept structural: testkit does not depend on the client). */
export interface FakeKubeConfigOptions {
  clusters: Array<{ name: string; server: string; skipTLSVerify: boolean }>;
  users: Array<{ name: string; token: string }>;
  contexts: Array<{ name: string; cluster: string; user: string; namespace?: string }>;
  currentContext: string;
}

export interface FakeKubeFailureOptions {
  /** Only requests this predicate accepts are failed (default: every request). */
  readonly match?: (request: FakeKubeRequest) => boolean;
  /** Sent as `Retry-After` (seconds), as the real server does with 429. */
  readonly retryAfterSeconds?: number;
}

export interface FakeKubeApiServer {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Every request received, in order. */
  readonly requests: FakeKubeRequest[];
  /** The current global resourceVersion. */
  readonly resourceVersion: number;
  /** Watch streams currently open. */
  readonly openWatchCount: number;
  /** Options for `KubeConfig.loadFromOptions` (plain http needs skipTLSVerify). */
  kubeConfigOptions(namespace?: string): FakeKubeConfigOptions;
  /** The same as a kubeconfig YAML document, for `--kubeconfig FILE`. */
  kubeConfigYaml(namespace?: string): string;
  /** Answers the next `count` matching requests with `status` and a Status body. */
  failNext(count: number, status: number, options?: FakeKubeFailureOptions): void;
  /** Objects of a type (kind, plural or plural.group), optionally of one namespace. */
  objects(type: string, namespace?: string): FakeKubeObject[];
  /** One object, or undefined. */
  get(type: string, name: string, namespace?: string): FakeKubeObject | undefined;
  /** Creates or overwrites an object (type from apiVersion/kind) with no checks, as set-up does. */
  put<T extends FakeKubeObjectInput>(obj: T): FakeKubeObject;
  /** Deletes an object with no checks; false when absent. */
  remove(type: string, name: string, namespace?: string): boolean;
  /** Forgets the retained watch history: watches from an older resourceVersion get 410. */
  compactHistory(): void;
  /** Ends every open watch stream from the server side. */
  closeWatches(): void;
  /** Ends all streams and connections and closes the listener. */
  stop(): Promise<void>;
}

const DEFAULT_NAMESPACES = ['default', 'kube-system', 'kube-public', 'gloo-mesh', 'istio-system'];

/** Starts the test double on 127.0.0.1:0. */
export async function startFakeKubeApiServer(options: FakeKubeApiServerOptions = {}): Promise<FakeKubeApiServer> {
  const server = new FakeKubeApiServerImpl(options);
  await server.listen();
  return server;
}

interface PendingFailure {
  remaining: number;
  readonly status: number;
  readonly options: FakeKubeFailureOptions;
}

class FakeKubeApiServerImpl implements FakeKubeApiServer {
  readonly requests: FakeKubeRequest[] = [];
  readonly #types: FakeKubeResourceTypeTable;
  readonly #store: FakeKubeStore;
  readonly #watches: FakeKubeWatchHub;
  readonly #router: FakeKubeRouter;
  readonly #server: Server;
  readonly #failures: PendingFailure[] = [];
  #url = '';

  constructor(options: FakeKubeApiServerOptions) {
    this.#types = new FakeKubeResourceTypeTable([...FAKE_KUBE_RESOURCE_TYPES, ...(options.extraResourceTypes ?? [])]);
    this.#store = new FakeKubeStore(options.historySize ?? 1000);
    this.#watches = new FakeKubeWatchHub(this.#store, {
      bookmarkIntervalMs: options.bookmarkIntervalMs ?? 0,
      expiredWatchAs: options.expiredWatchAs ?? 'event',
    });
    this.#router = new FakeKubeRouter(this.#types, this.#store, this.#watches);
    const namespaceType = this.#types.resolve('Namespace');
    for (const name of options.namespaces ?? DEFAULT_NAMESPACES) {
      this.#store.put(namespaceType, {
        metadata: { name },
        spec: { finalizers: ['kubernetes'] },
        status: { phase: 'Active' },
      });
    }
    this.#server = createServer((req, res) => void this.#handle(req, res));
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(0, '127.0.0.1', () => resolve());
    });
    this.#url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  get url(): string {
    return this.#url;
  }

  get resourceVersion(): number {
    return this.#store.resourceVersion;
  }

  get openWatchCount(): number {
    return this.#watches.openCount;
  }

  kubeConfigOptions(namespace?: string): FakeKubeConfigOptions {
    return {
      clusters: [{ name: 'fake-kube', server: this.#url, skipTLSVerify: true }],
      users: [{ name: 'fake-kube-user', token: 'fake-kube-token' }],
      contexts: [
        { name: 'fake-kube', cluster: 'fake-kube', user: 'fake-kube-user', ...(namespace ? { namespace } : {}) },
      ],
      currentContext: 'fake-kube',
    };
  }

  kubeConfigYaml(namespace?: string): string {
    const ns = namespace ? `\n    namespace: ${namespace}` : '';
    return [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: fake-kube',
      '  cluster:',
      `    server: ${this.#url}`,
      '    insecure-skip-tls-verify: true',
      'users:',
      '- name: fake-kube-user',
      '  user:',
      '    token: fake-kube-token',
      'contexts:',
      '- name: fake-kube',
      '  context:',
      '    cluster: fake-kube',
      `    user: fake-kube-user${ns}`,
      'current-context: fake-kube',
      '',
    ].join('\n');
  }

  failNext(count: number, status: number, options: FakeKubeFailureOptions = {}): void {
    this.#failures.push({ remaining: count, status, options });
  }

  objects(type: string, namespace?: string): FakeKubeObject[] {
    return this.#store.list(this.#types.resolve(type), namespace);
  }

  get(type: string, name: string, namespace?: string): FakeKubeObject | undefined {
    const resolved = this.#types.resolve(type);
    return this.#store.get(resolved, resolved.namespaced ? (namespace ?? 'default') : '', name);
  }

  put<T extends FakeKubeObjectInput>(input: T): FakeKubeObject {
    const obj = { ...input, metadata: { ...(input.metadata ?? {}) } } as unknown as FakeKubeObject;
    const type = this.#types.ofObject(obj.apiVersion ?? '', obj.kind ?? '');
    if (!type) throw new Error(`fake kube-apiserver: no resource type for ${obj.apiVersion}/${obj.kind}`);
    return this.#store.put(type, obj);
  }

  remove(type: string, name: string, namespace?: string): boolean {
    const resolved = this.#types.resolve(type);
    return this.#store.remove(resolved, resolved.namespaced ? (namespace ?? 'default') : '', name);
  }

  compactHistory(): void {
    this.#store.compactHistory();
  }

  closeWatches(): void {
    this.#watches.closeAll();
  }

  async stop(): Promise<void> {
    this.#watches.closeAll();
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake-kube');
    const contentType = req.headers['content-type']?.split(';')[0]?.trim();
    const entry: FakeKubeRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      contentType,
      body: undefined,
      status: 0,
    };
    this.requests.push(entry);
    try {
      entry.body = parseBody(await readBody(req), contentType);
      if (this.#injectFailure(entry, res)) return;
      const answer = this.#router.route(entry, url.searchParams, res);
      if (answer === 'streaming') {
        entry.status = 200;
        return;
      }
      entry.status = answer.status;
      sendJson(res, answer.status, answer.body);
    } catch (err) {
      const status = toStatusError(err);
      entry.status = status.status.code;
      if (!res.headersSent) sendJson(res, status.status.code, status.status);
      else res.end();
    }
  }

  #injectFailure(entry: FakeKubeRequest, res: ServerResponse): boolean {
    const failure = this.#failures.find((f) => f.remaining > 0 && (f.options.match?.(entry) ?? true));
    if (!failure) return false;
    failure.remaining--;
    entry.status = failure.status;
    const status = new FakeKubeStatusError(
      failure.status,
      reasonForCode(failure.status),
      `injected failure ${failure.status}`,
    ).status;
    if (failure.options.retryAfterSeconds !== undefined)
      res.setHeader('Retry-After', String(failure.options.retryAfterSeconds));
    sendJson(res, failure.status, status);
    return true;
  }
}

function toStatusError(err: unknown): FakeKubeStatusError {
  if (err instanceof FakeKubeStatusError) return err;
  if (err instanceof FakeKubePatchError) return new FakeKubeStatusError(422, 'Invalid', err.message);
  if (err instanceof FakeKubeSelectorError) return new FakeKubeStatusError(400, 'BadRequest', err.message);
  if (err instanceof SyntaxError) return new FakeKubeStatusError(400, 'BadRequest', `malformed body: ${err.message}`);
  return new FakeKubeStatusError(500, 'InternalError', err instanceof Error ? err.message : String(err));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function parseBody(text: string, contentType: string | undefined): unknown {
  if (text.trim() === '') return undefined;
  if (contentType === 'application/apply-patch+yaml') return parseYaml(text) as unknown;
  return JSON.parse(text) as unknown;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}
