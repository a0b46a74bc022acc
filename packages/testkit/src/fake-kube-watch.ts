// Watch streams of the fake kube-apiserver: a chunked HTTP response of JSON lines
// `{"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}`, replaying retained history
// after the requested resourceVersion and then following live writes. As on a real server, an
// object that stops matching the selector arrives as DELETED and one that starts matching as ADDED;
// a resourceVersion older than the retained history gets an ERROR event carrying a 410 Expired
// Status and the stream ends (or, with `expiredWatchAs: 'status'`, an HTTP 410 response).

import type { ServerResponse } from 'node:http';
import { apiVersionOf, type FakeKubeResourceType } from './fake-kube-resource-types.ts';
import type { FakeKubeObject, FakeKubeObjectFilter } from './fake-kube-selectors.ts';
import type { FakeKubeEvent, FakeKubeStore } from './fake-kube-store.ts';
import { FakeKubeStatusError } from './fake-kube-status.ts';

export interface FakeKubeWatchRequest {
  readonly type: FakeKubeResourceType;
  /** undefined: all namespaces. */
  readonly namespace: string | undefined;
  readonly filter: FakeKubeObjectFilter;
  /** The raw `resourceVersion` query value ('' when absent). */
  readonly resourceVersion: string;
  readonly timeoutSeconds: number | undefined;
  readonly bookmarks: boolean;
}

export interface FakeKubeWatchSettings {
  readonly bookmarkIntervalMs: number;
  readonly expiredWatchAs: 'event' | 'status';
}

type WireEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

function writeEvent(res: ServerResponse, type: WireEventType, object: unknown): void {
  res.write(`${JSON.stringify({ type, object })}\n`);
}

/** What a watcher with `request` sees of `event`: nothing, or an event type (selector transitions). */
function translate(
  request: FakeKubeWatchRequest,
  event: FakeKubeEvent,
): Exclude<WireEventType, 'BOOKMARK' | 'ERROR'> | undefined {
  if (event.resource !== request.type) return undefined;
  const inScope = (obj: FakeKubeObject | undefined): boolean =>
    obj !== undefined &&
    (request.namespace === undefined || obj.metadata.namespace === request.namespace) &&
    request.filter(obj);
  const now = inScope(event.object);
  if (event.type !== 'MODIFIED') return now ? event.type : undefined;
  const before = inScope(event.previous);
  if (now && before) return 'MODIFIED';
  if (now) return 'ADDED';
  if (before) return 'DELETED';
  return undefined;
}

/** Open watch streams, so the server can end them all (stop, closeWatches). */
export class FakeKubeWatchHub {
  readonly #store: FakeKubeStore;
  readonly #settings: FakeKubeWatchSettings;
  readonly #open = new Set<ServerResponse>();

  constructor(store: FakeKubeStore, settings: FakeKubeWatchSettings) {
    this.#store = store;
    this.#settings = settings;
  }

  /** Number of watch streams currently open. */
  get openCount(): number {
    return this.#open.size;
  }

  /** Ends every open stream as a server-side close (clients re-watch from their last version). */
  closeAll(): void {
    for (const res of [...this.#open]) res.end();
  }

  /**
   * Serves one watch on `res`. Resolves to the HTTP status written (200, or 410 when
   * `expiredWatchAs` is 'status'); the stream itself stays open until the client goes away,
   * `timeoutSeconds` passes, or closeAll().
   */
  serve(request: FakeKubeWatchRequest, res: ServerResponse): number {
    let replay: FakeKubeEvent[] = [];
    let initial: FakeKubeObject[] = [];
    const rv = request.resourceVersion;
    try {
      if (rv === '' || rv === '0') initial = this.#store.list(request.type, request.namespace).filter(request.filter);
      else replay = this.#store.eventsSince(parseResourceVersion(rv), rv);
    } catch (err) {
      if (!(err instanceof FakeKubeStatusError) || this.#settings.expiredWatchAs === 'status') throw err;
      this.#startStream(res);
      writeEvent(res, 'ERROR', err.status);
      res.end();
      return 200;
    }
    this.#startStream(res);
    for (const obj of initial) writeEvent(res, 'ADDED', obj);
    for (const event of replay) this.#forward(request, event, res);
    const unsubscribe = this.#store.subscribe((event) => this.#forward(request, event, res));
    const timers: NodeJS.Timeout[] = [];
    if (request.timeoutSeconds !== undefined) timers.push(setTimeout(() => res.end(), request.timeoutSeconds * 1000));
    if (request.bookmarks && this.#settings.bookmarkIntervalMs > 0) {
      const bookmark = { apiVersion: apiVersionOf(request.type), kind: request.type.kind };
      timers.push(
        setInterval(
          () =>
            writeEvent(res, 'BOOKMARK', {
              ...bookmark,
              metadata: { resourceVersion: String(this.#store.resourceVersion) },
            }),
          this.#settings.bookmarkIntervalMs,
        ),
      );
    }
    for (const timer of timers) timer.unref();
    res.on('close', () => {
      unsubscribe();
      for (const timer of timers) clearTimeout(timer);
    });
    return 200;
  }

  #startStream(res: ServerResponse): void {
    this.#open.add(res);
    res.on('close', () => this.#open.delete(res));
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
  }

  #forward(request: FakeKubeWatchRequest, event: FakeKubeEvent, res: ServerResponse): void {
    const type = translate(request, event);
    if (type !== undefined && !res.writableEnded) writeEvent(res, type, event.object);
  }
}

/** A resourceVersion query value as a number; 400 BadRequest when it is not one. */
export function parseResourceVersion(raw: string): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) {
    throw new FakeKubeStatusError(400, 'BadRequest', `invalid resource version "${raw}"`);
  }
  return value;
}
