import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { pino, type Logger } from 'pino';

/** A fresh temporary directory, removed when the test ends. */
export async function tempDir(t: TestContext, prefix = 'meshrelay-agent-'): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  // An agent stopped by a later hook may still be writing into its state dir: rm retries ENOTEMPTY.
  t.after(() => rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }));
  return dir;
}

/** A logger that keeps every line as an object, for asserting on what was logged. */
export function captureLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'debug' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { logger, lines };
}

export function serviceYaml(name: string, port = 9080, namespace = 'bookinfo'): string {
  return [
    'apiVersion: v1',
    'kind: Service',
    'metadata:',
    `  name: ${name}`,
    `  namespace: ${namespace}`,
    '  resourceVersion: "123"',
    'spec:',
    '  selector: { app: ' + name + ' }',
    '  ports:',
    `    - { name: http, port: ${port}, protocol: TCP }`,
    '',
  ].join('\n');
}
