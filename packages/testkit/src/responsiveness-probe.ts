import type { TestContext } from 'node:test';
import { performance } from 'node:perf_hooks';
import { Client, credentials, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import { REGISTRATION_SERVICE, RELAY_SERVICE, type relay } from '@meshrelay/api';
import { createCsr, generateKeyPair } from '@meshrelay/certs';
import { waitFor } from './process-harness.ts';

/** What a probe saw since its last reset(). */
export interface ProbeWindow {
  /** Longest time between two consecutive observations (heartbeats, or health answers), ms. */
  readonly maxGapMs: number;
  /** Observations in the window. */
  readonly count: number;
  /** Failed observations in the window (a health probe's errors and non-2xx answers). */
  readonly failures: number;
}

export interface ResponsivenessProbe {
  /** Starts a new window (call right before the work under test). */
  reset(): void;
  /** The window so far; the gap after the last observation counts up to now. */
  window(): ProbeWindow;
}

class GapRecorder implements ResponsivenessProbe {
  #last = performance.now();
  #maxGap = 0;
  #count = 0;
  #failures = 0;

  failed(): void {
    this.#failures++;
  }

  observe(): void {
    const now = performance.now();
    this.#maxGap = Math.max(this.#maxGap, now - this.#last);
    this.#last = now;
    this.#count++;
  }

  reset(): void {
    this.#last = performance.now();
    this.#maxGap = 0;
    this.#count = 0;
    this.#failures = 0;
  }

  window(): ProbeWindow {
    return {
      maxGapMs: Math.max(this.#maxGap, performance.now() - this.#last),
      count: this.#count,
      failures: this.#failures,
    };
  }
}

export interface HeartbeatProbeTarget {
  /** host:port of the relay gRPC server. */
  readonly address: string;
  readonly caPem: string;
  /** A relay identity token of `cluster`, registered on that server. */
  readonly token: string;
  readonly cluster: string;
}

/**
 * A second agent connection that only listens: registers `cluster` over TLS,
 * opens a Push stream over mTLS and records the gaps between the heartbeats the
 * server sends on it. A server whose event loop is held up sends them late.
 */
export async function startHeartbeatProbe(t: TestContext, target: HeartbeatProbeTarget): Promise<ResponsivenessProbe> {
  const keys = generateKeyPair();
  const tls = new Client(target.address, credentials.createSsl(Buffer.from(target.caPem)));
  const res = await new Promise<relay.v1.IRegisterResponse>((resolve, reject) => {
    const m = REGISTRATION_SERVICE.register;
    tls.makeUnaryRequest(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      { cluster: target.cluster, token: target.token, csrPem: createCsr({ ...keys, cluster: target.cluster }) },
      (err: ServiceError | null, r?: relay.v1.IRegisterResponse) => (err ? reject(err) : resolve(r ?? {})),
    );
  }).finally(() => tls.close());
  const client = new Client(
    target.address,
    credentials.createSsl(
      Buffer.from(target.caPem),
      Buffer.from(keys.privateKeyPem),
      Buffer.from(res.certificatePem ?? ''),
    ),
  );
  const m = RELAY_SERVICE.push;
  const stream: ClientDuplexStream<relay.v1.IPushRequest, relay.v1.IPushResponse> = client.makeBidiStreamRequest(
    m.path,
    m.requestSerialize,
    m.responseDeserialize,
  );
  const recorder = new GapRecorder();
  let beats = 0;
  stream.on('data', (msg: relay.v1.IPushResponse) => {
    if (!msg.heartbeat) return;
    beats++;
    recorder.observe();
    stream.write({ heartbeat: { sentUnixMs: Date.now() } });
  });
  stream.on('error', () => undefined);
  t.after(() => {
    stream.cancel();
    client.close();
  });
  // The stream is up once the server's first heartbeat arrived.
  await waitFor(() => beats > 0, { timeoutMs: 10_000 });
  return recorder;
}

/**
 * Asks `url` again as soon as each answer arrives and records the gaps between
 * answers: an HTTP server whose event loop is held up answers late. Failed
 * requests are counted, not thrown (the server may stop before the probe does).
 */
export function startHealthProbe(t: TestContext, url: string): ResponsivenessProbe {
  const recorder = new GapRecorder();
  let stopped = false;
  const loop = async (): Promise<void> => {
    while (!stopped) {
      try {
        const res = await fetch(url);
        await res.arrayBuffer();
        if (res.ok) recorder.observe();
        else recorder.failed();
      } catch {
        recorder.failed();
        if (!stopped) await new Promise((resolve) => setImmediate(resolve));
      }
    }
  };
  const running = loop();
  t.after(async () => {
    stopped = true;
    await running;
  });
  return recorder;
}
