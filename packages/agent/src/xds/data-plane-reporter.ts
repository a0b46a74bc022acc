import type { relay } from '@meshrelay/api';
import type { XdsFinding } from '@meshrelay/xds';
import type { ProxyStatus } from './ads-stream.ts';

/**
 * Bounds of one report, so that a fleet of proxies cannot make the relay carry (or the
 * management plane store) an unbounded message: what is left out is counted, never hidden.
 */
export const REPORT_LIMITS = { proxies: 500, namesPerType: 20, findings: 200, text: 512 } as const;

function clip(text: string): string {
  return text.length <= REPORT_LIMITS.text ? text : `${text.slice(0, REPORT_LIMITS.text - 1)}…`;
}

function proxyMessage(p: ProxyStatus): relay.v1.IXdsProxy {
  const types: Record<string, relay.v1.IXdsTypeState> = {};
  for (const [type, names] of Object.entries(p.subscribed)) {
    types[type] = {
      names: names.slice(0, REPORT_LIMITS.namesPerType).map(clip),
      subscribed: names.length,
      ackedVersion: p.ackedVersion[type] ?? '',
    };
  }
  const locality = [p.locality.region, p.locality.zone, p.locality.subZone]
    .filter((x) => x !== undefined && x !== '')
    .join('/');
  return {
    nodeId: clip(p.nodeId),
    locality,
    types,
    nacks: p.nacks,
    ...(p.lastNack
      ? {
          lastNack: {
            typeUrl: p.lastNack.typeUrl,
            version: p.lastNack.version,
            reason: clip(p.lastNack.reason),
            atUnixMs: Date.parse(p.lastNack.at),
          },
        }
      : {}),
  };
}

/** The report of an agent's xDS server: its proxies (by node id) and its translation's findings, bounded. */
export function buildDataPlaneReport(
  serving: boolean,
  proxies: readonly ProxyStatus[],
  findings: readonly XdsFinding[],
  nowMs: number,
): relay.v1.IDataPlaneReport {
  const sorted = [...proxies].sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
  return {
    sentUnixMs: nowMs,
    serving,
    proxies: sorted.slice(0, REPORT_LIMITS.proxies).map(proxyMessage),
    proxiesNotListed: Math.max(0, sorted.length - REPORT_LIMITS.proxies),
    findings: findings.slice(0, REPORT_LIMITS.findings).map((f) => ({
      source: clip(f.source),
      sources: f.sources.map(clip),
      field: clip(f.field),
      message: clip(f.message),
    })),
  };
}

export interface DataPlaneReporterOptions {
  /** The report as of now. */
  readonly build: () => relay.v1.IDataPlaneReport;
  /** Sends on the current Pull stream; false when no stream is open (the next one gets it). */
  readonly send: (report: relay.v1.IDataPlaneReport) => boolean;
  /** Least time between two reports (default 1 s): proxies ACK on every push, the relay need not hear each. */
  readonly minIntervalMs?: number;
}

/**
 * Sends the management plane what the agent's xDS server sees, whenever that changed, at
 * most once per interval (the last change always goes out), and again in full on every new
 * Pull stream, since the replica at the other end may be another one.
 */
export class DataPlaneReporter {
  readonly #opts: DataPlaneReporterOptions;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | undefined;
  #lastSentAt = Number.NEGATIVE_INFINITY;
  #sentSignature: string | undefined;
  #stopped = false;

  constructor(opts: DataPlaneReporterOptions) {
    this.#opts = opts;
    this.#intervalMs = opts.minIntervalMs ?? 1_000;
  }

  /** Something the report shows may have changed. */
  changed(): void {
    if (this.#stopped || this.#timer !== undefined) return;
    const wait = Math.max(0, this.#lastSentAt + this.#intervalMs - Date.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#flush();
    }, wait);
    this.#timer.unref();
  }

  /** A new Pull stream opened: what was sent on the previous one counts for nothing. */
  streamOpened(): void {
    this.#sentSignature = undefined;
    this.changed();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #flush(): void {
    if (this.#stopped) return;
    const report = this.#opts.build();
    const { sentUnixMs: _, ...content } = report;
    const signature = JSON.stringify(content);
    if (signature === this.#sentSignature) return;
    if (!this.#opts.send(report)) return;
    this.#sentSignature = signature;
    this.#lastSentAt = Date.now();
  }
}
