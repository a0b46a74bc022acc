/**
 * Profiles the server over one phase of the tier bench through its inspector: with
 * BENCH_SERVER_NODE_ARGS="--inspect=127.0.0.1:<port>" and MESHRELAY_BENCH_PROFILE=<file>, the
 * readiness changes run under V8's CPU profiler and the profile is written to <file> (open it in
 * Chrome DevTools, or `node bench/tier/server-profile.ts <file>` for the functions with the most
 * self time). A whole-process --cpu-prof would be lost to the storm's kill -9 and dominated by the
 * cold start.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { MeshrelayError } from '@meshrelay/api';

interface Session {
  send(method: string, params?: object): Promise<unknown>;
  close(): void;
}

async function connect(port: number): Promise<Session> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{
    webSocketDebuggerUrl: string;
  }>;
  const url = targets[0]?.webSocketDebuggerUrl;
  if (url === undefined) throw new MeshrelayError('MESHRELAY_ERR_UNAVAILABLE', `no inspector target on port ${port}`);
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = () =>
      reject(new MeshrelayError('MESHRELAY_ERR_UNAVAILABLE', `inspector ${url} refused the connection`));
  });
  let next = 1;
  const pending = new Map<number, (result: unknown) => void>();
  ws.onmessage = (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
    if (message.id !== undefined) pending.get(message.id)?.(message.result);
  };
  return {
    send: (method, params = {}) =>
      new Promise((resolve) => {
        const id = next++;
        pending.set(id, resolve);
        ws.send(JSON.stringify({ id, method, params }));
      }),
    close: () => ws.close(),
  };
}

/** Runs `work` under the server's CPU profiler when the environment asks for it (see the file comment). */
export async function profiled<T>(work: () => Promise<T>): Promise<T> {
  const file = process.env['MESHRELAY_BENCH_PROFILE'];
  const port = /--inspect=(?:[\d.]+:)?(\d+)/.exec(process.env['BENCH_SERVER_NODE_ARGS'] ?? '')?.[1];
  if (file === undefined || port === undefined) return work();
  const session = await connect(Number(port));
  await session.send('Profiler.enable');
  await session.send('Profiler.start');
  try {
    return await work();
  } finally {
    const { profile } = (await session.send('Profiler.stop')) as { profile: unknown };
    writeFileSync(file, JSON.stringify(profile));
    session.close();
    console.error(`wrote the server's CPU profile to ${file}`);
  }
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

/** The functions with the most self time in a .cpuprofile, with their share of the busy samples (idle left out). */
export function topFunctions(profile: { nodes: ProfileNode[]; samples: number[] }, count = 20): string[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  const busy = profile.samples.filter((id) => byId.get(id)?.callFrame.functionName !== '(idle)');
  for (const id of busy) {
    const frame = byId.get(id)?.callFrame;
    const key = frame
      ? `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/(packages|node_modules)\//, '$1/')}:${frame.lineNumber + 1}`
      : '?';
    self.set(key, (self.get(key) ?? 0) + 1);
  }
  const total = busy.length;
  return [
    `${busy.length} busy samples of ${profile.samples.length}`,
    ...[...self]
      .sort((a, b) => b[1] - a[1])
      .slice(0, count)
      .map(([key, n]) => `${((100 * n) / total).toFixed(1)} % ${key}`),
  ];
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const file = process.argv[2];
  if (file === undefined)
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      'usage: node bench/tier/server-profile.ts <file.cpuprofile>',
    );
  console.log(
    topFunctions(JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[] }).join('\n'),
  );
}
