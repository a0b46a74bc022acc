import { connect, createServer, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a real server that tests use to inject network
 * faults: cut every connection, freeze traffic (connections stay open, nothing
 * moves — a frozen process or a half-open link), refuse new connections, or
 * delay every chunk. It forwards bytes as they are (TLS passes through), so
 * both ends are the real thing.
 */
export interface FaultProxy {
  /** `localhost:<port>` to dial instead of the server. */
  readonly address: string;
  readonly port: number;
  /** Chunks forwarded client→server and server→client so far (progress without decoding). */
  readonly forwarded: { readonly up: number; readonly down: number };
  /** Connections closed at once because the proxy was down. */
  readonly refused: number;
  /** Connections currently open through the proxy. */
  readonly connections: number;
  /** Destroys every open connection, both sides. */
  cut(): void;
  /** Stops moving bytes in both directions until thaw(); new connections are held too. */
  freeze(): void;
  thaw(): void;
  /** While down, new connections are closed at once (a server that is gone). */
  setDown(down: boolean): void;
  /** Delays every chunk by ms in both directions (0 = none). */
  setDelay(ms: number): void;
  close(): Promise<void>;
}

interface Link {
  readonly client: Socket;
  readonly server: Socket;
}

export async function startFaultProxy(target: { host?: string; port: number }): Promise<FaultProxy> {
  const links = new Set<Link>();
  const forwarded = { up: 0, down: 0 };
  let frozen = false;
  let down = false;
  let delayMs = 0;
  let refused = 0;

  const pipe = (from: Socket, to: Socket, direction: 'up' | 'down') => {
    let chain = Promise.resolve();
    from.on('data', (data: Buffer) => {
      const send = () => {
        forwarded[direction]++;
        if (!to.destroyed) to.write(data);
      };
      if (delayMs === 0) {
        chain = chain.then(send);
        return;
      }
      const wait = delayMs;
      chain = chain.then(() => new Promise<void>((resolve) => setTimeout(() => (send(), resolve()), wait)));
    });
    from.on('close', () => to.destroy());
    from.on('error', () => to.destroy());
  };

  const listener = createServer((client) => {
    if (down) {
      refused++;
      client.destroy();
      return;
    }
    const server = connect(target.port, target.host ?? '127.0.0.1');
    const link = { client, server };
    links.add(link);
    client.on('close', () => links.delete(link));
    pipe(client, server, 'up');
    pipe(server, client, 'down');
    if (frozen) {
      client.pause();
      server.pause();
    }
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', () => resolve()));
  const port = (listener.address() as { port: number }).port;

  const cut = () => {
    for (const { client, server } of links) {
      client.destroy();
      server.destroy();
    }
    links.clear();
  };
  return {
    address: `localhost:${port}`,
    port,
    forwarded,
    get refused() {
      return refused;
    },
    get connections() {
      return links.size;
    },
    cut,
    freeze() {
      frozen = true;
      for (const { client, server } of links) {
        client.pause();
        server.pause();
      }
    },
    thaw() {
      frozen = false;
      for (const { client, server } of links) {
        client.resume();
        server.resume();
      }
    },
    setDown(value) {
      down = value;
    },
    setDelay(ms) {
      delayMs = ms;
    },
    close() {
      cut();
      return new Promise((resolve) => listener.close(() => resolve()));
    },
  };
}
