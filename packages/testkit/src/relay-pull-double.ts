import type { TestContext } from 'node:test';
import { performance } from 'node:perf_hooks';
import { Server, ServerCredentials, type ServerDuplexStream } from '@grpc/grpc-js';
import { RELAY_SERVICE, type SnapshotFrames, type relay } from '@meshrelay/api';

/**
 * A test double of a management server's Relay.Pull side, standing in for a server that is not
 * trusted (a compromised or broken one): it sends an agent exactly the frames a test gives it,
 * which the real server never would, and records what the agent writes back — its acks and
 * when each of its heartbeats arrived. Plaintext on localhost: what is under test is how the
 * agent's pull stream takes the frames in, not the channel.
 */
export interface RelayPullDouble {
  /** `localhost:<port>` to dial with insecure credentials. */
  readonly address: string;
  /** Acks the agent sent, in order. */
  readonly acks: readonly relay.v1.IAck[];
  /**
   * Longest time between two of the agent's heartbeats (or since the last one) since reset(), ms, and how many arrived.
   */
  heartbeatWindow(): { readonly maxGapMs: number; readonly count: number };
  resetHeartbeats(): void;
  /** Resolves once an agent opened a Pull stream and said hello. */
  connected(): Promise<void>;
  /** Writes a snapshot's header and chunks on the open stream. */
  send(frames: SnapshotFrames): void;
}

export async function startRelayPullDouble(t: TestContext): Promise<RelayPullDouble> {
  const server = new Server();
  const acks: relay.v1.IAck[] = [];
  let call: ServerDuplexStream<relay.v1.IPullRequest, relay.v1.IPullResponse> | undefined;
  let hello: () => void = () => undefined;
  const helloSeen = new Promise<void>((resolve) => (hello = resolve));
  let last = performance.now();
  let maxGap = 0;
  let count = 0;
  server.addService(
    { pull: RELAY_SERVICE.pull },
    {
      pull: (stream: ServerDuplexStream<relay.v1.IPullRequest, relay.v1.IPullResponse>) => {
        call = stream;
        stream.on('data', (msg: relay.v1.IPullRequest) => {
          if (msg.hello) hello();
          if (msg.ack) acks.push(msg.ack);
          if (msg.heartbeat) {
            const now = performance.now();
            maxGap = Math.max(maxGap, now - last);
            last = now;
            count++;
            stream.write({ heartbeat: { sentUnixMs: Date.now() } });
          }
        });
        stream.on('error', () => undefined);
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  t.after(() => server.forceShutdown());
  return {
    address: `localhost:${port}`,
    acks,
    heartbeatWindow: () => ({ maxGapMs: Math.max(maxGap, performance.now() - last), count }),
    resetHeartbeats: () => {
      last = performance.now();
      maxGap = 0;
      count = 0;
    },
    connected: () => helloSeen,
    send: (frames) => {
      if (!call) throw new Error('no agent has opened a Pull stream');
      call.write({ header: frames.header });
      for (const chunk of frames.chunks) call.write({ chunk });
    },
  };
}
