export type StreamKind = 'push' | 'pull';

/** One open Push or Pull stream, as the tracker sees it. */
export interface StreamHandle {
  readonly id: number;
  readonly cluster: string;
  readonly kind: StreamKind;
  readonly peer: string;
  readonly openedAt: Date;
  /** notBefore of the client certificate that opened the stream (checked against revocations). */
  readonly certificateNotBefore: Date;
  /** Bytes written to the stream that the agent has not taken yet. */
  queuedBytes(): number;
  /** Asks the agent to move elsewhere, then ends the stream. */
  goAway(retryAfterMs: number, reason: string): void;
  /** Ends the stream with a gRPC status. */
  terminate(code: number, message: string): void;
}

export interface ClusterConnectionState {
  readonly push: number;
  readonly pull: number;
  /** When the last stream of this cluster closed, while none is open. */
  readonly disconnectedSince?: Date;
  readonly lastConnectedAt?: Date;
}

/**
 * The streams open on this replica, per cluster. Opening a second stream of
 * the same kind for a cluster fences off the older one: the newer connection
 * wins, so a restarted agent never waits for its own ghost to time out.
 */
export class ConnectionTracker {
  readonly #streams = new Map<number, StreamHandle>();
  readonly #disconnectedSince = new Map<string, Date>();
  readonly #lastConnectedAt = new Map<string, Date>();
  readonly #listeners = new Set<() => void>();
  readonly #applied = new Map<string, string>();
  readonly #warmed = new Set<number>();
  #nextId = 1;

  /** Records the output hash an agent reported holding or having applied. */
  setApplied(cluster: string, hash: string): void {
    this.#applied.set(cluster, hash);
  }

  applied(cluster: string): string | undefined {
    return this.#applied.get(cluster);
  }

  nextId(): number {
    return this.#nextId++;
  }

  /** Adds a stream and returns the streams it fenced off (already terminated). */
  add(handle: StreamHandle, fence: (old: StreamHandle) => void): StreamHandle[] {
    const fenced = [...this.#streams.values()].filter((s) => s.cluster === handle.cluster && s.kind === handle.kind);
    for (const old of fenced) {
      this.#streams.delete(old.id);
      fence(old);
    }
    this.#streams.set(handle.id, handle);
    this.#disconnectedSince.delete(handle.cluster);
    this.#lastConnectedAt.set(handle.cluster, handle.openedAt);
    this.#emit();
    return fenced;
  }

  /** Removes a stream; returns false when it was already gone (fenced or removed). */
  remove(handle: StreamHandle, now: Date): boolean {
    this.#warmed.delete(handle.id);
    if (!this.#streams.delete(handle.id)) return false;
    if (!this.isConnected(handle.cluster)) this.#disconnectedSince.set(handle.cluster, now);
    this.#emit();
    return true;
  }

  isConnected(cluster: string): boolean {
    return [...this.#streams.values()].some((s) => s.cluster === cluster);
  }

  state(cluster: string): ClusterConnectionState {
    const streams = [...this.#streams.values()].filter((s) => s.cluster === cluster);
    const disconnectedSince = this.#disconnectedSince.get(cluster);
    const lastConnectedAt = this.#lastConnectedAt.get(cluster);
    return {
      push: streams.filter((s) => s.kind === 'push').length,
      pull: streams.filter((s) => s.kind === 'pull').length,
      ...(disconnectedSince ? { disconnectedSince } : {}),
      ...(lastConnectedAt ? { lastConnectedAt } : {}),
    };
  }

  streams(cluster?: string): StreamHandle[] {
    return [...this.#streams.values()].filter((s) => cluster === undefined || s.cluster === cluster);
  }

  /** Marks a push stream as warmed: it delivered a snapshot that was accepted. */
  markWarmed(handle: StreamHandle): void {
    if (this.#streams.has(handle.id)) this.#warmed.add(handle.id);
  }

  warmedCounts(): Map<string, number> {
    const out = new Map<string, number>();
    for (const s of this.#streams.values())
      if (this.#warmed.has(s.id)) out.set(s.cluster, (out.get(s.cluster) ?? 0) + 1);
    return out;
  }

  /** Counts open streams per cluster for one kind (for the connected-clients gauges). */
  counts(kind: StreamKind): Map<string, number> {
    const out = new Map<string, number>();
    for (const s of this.#streams.values()) if (s.kind === kind) out.set(s.cluster, (out.get(s.cluster) ?? 0) + 1);
    return out;
  }

  forget(cluster: string): void {
    this.#applied.delete(cluster);
    this.#disconnectedSince.delete(cluster);
    this.#lastConnectedAt.delete(cluster);
    this.#emit();
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(): void {
    for (const listener of this.#listeners) listener();
  }
}
