import { isIP } from 'node:net';
import { connect } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ReachabilityWaitOptions {
  /** host:port of each management server. */
  readonly addresses: readonly string[];
  /** The backoff delay: the longest this wait lasts. */
  readonly delayMs: number;
  /** Time between probe rounds while every address is unreachable. */
  readonly probeIntervalMs: number;
  readonly signal: AbortSignal;
  /** One probe (default: a TLS handshake); injectable for tests of the wait itself. */
  readonly probe?: (address: string, signal: AbortSignal) => Promise<boolean>;
}

/** How the wait ended: the delay ran out, or the address at `index` became reachable first. */
export type ReachabilityWaitResult =
  { readonly kind: 'elapsed' } | { readonly kind: 'reachable'; readonly index: number };

const PROBE_TIMEOUT_MS = 2000;

/**
 * Sleeps for a backoff delay, but ends early when a management server that was
 * unreachable when the wait began becomes reachable again (a replica restarted):
 * the agent then need not sit out the rest of a long backoff tail. When some
 * server already answers at the start, the failure had another cause and the
 * wait is a plain sleep, so a server that refuses the agent is not hammered.
 */
export async function waitOrReachable(options: ReachabilityWaitOptions): Promise<ReachabilityWaitResult> {
  const { delayMs, probeIntervalMs, signal } = options;
  const probe = options.probe ?? tlsHandshakes;
  const deadline = Date.now() + delayMs;
  if (delayMs <= probeIntervalMs || (await firstReachable(options.addresses, probe, signal)) !== undefined) {
    await sleep(Math.max(0, deadline - Date.now()), undefined, { signal }).catch(() => undefined);
    return { kind: 'elapsed' };
  }
  while (!signal.aborted && Date.now() < deadline) {
    await sleep(Math.min(probeIntervalMs, Math.max(0, deadline - Date.now())), undefined, { signal }).catch(
      () => undefined,
    );
    if (signal.aborted || Date.now() >= deadline) break;
    const index = await firstReachable(options.addresses, probe, signal);
    if (index !== undefined) return { kind: 'reachable', index };
  }
  return { kind: 'elapsed' };
}

async function firstReachable(
  addresses: readonly string[],
  probe: (address: string, signal: AbortSignal) => Promise<boolean>,
  signal: AbortSignal,
): Promise<number | undefined> {
  const results = await Promise.all(addresses.map((a) => probe(a, signal).catch(() => false)));
  const index = results.indexOf(true);
  return index < 0 ? undefined : index;
}

/**
 * True when a TLS handshake with `address` completes. Nothing is sent over the
 * connection and it is closed at once, so the server's certificate is not
 * judged here: the real connection that follows verifies it as always. A bare
 * TCP connect is not enough: a load balancer or proxy accepts it with no
 * server behind.
 */
export function tlsHandshakes(address: string, signal: AbortSignal): Promise<boolean> {
  const { host, port } = splitAddress(address);
  return new Promise((resolve) => {
    const socket = connect({
      host,
      port,
      ...(isIP(host) ? {} : { servername: host }),
      rejectUnauthorized: false,
      ALPNProtocols: ['h2'],
    });
    const onAbort = () => done(false);
    const done = (ok: boolean) => {
      signal.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(ok);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    socket.setTimeout(PROBE_TIMEOUT_MS, () => done(false));
    socket.once('secureConnect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('close', () => done(false));
  });
}

function splitAddress(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at).replace(/^\[(.*)\]$/, '$1');
  return { host: host === '' ? 'localhost' : host, port: Number(address.slice(at + 1)) };
}
