// A real Prometheus (Debian's `prometheus` package) scraping management
// replicas, for checking the operator queries docs/operating/safe-mode.md documents.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { freePort, spawnProcess, waitFor, type ProcessHandle } from '@meshrelay/testkit';

export interface PromSample {
  readonly metric: Record<string, string>;
  readonly value: [number, string];
}

export class Prometheus {
  readonly url: string;
  readonly proc: ProcessHandle;

  private constructor(url: string, proc: ProcessHandle) {
    this.url = url;
    this.proc = proc;
  }

  /** Starts Prometheus scraping each target (host:port) every 500 ms. */
  static async start(t: TestContext, targets: readonly string[]): Promise<Prometheus> {
    const dir = mkdtempSync(join(tmpdir(), 'meshrelay-prom-'));
    const config = `global:
  scrape_interval: 500ms
  evaluation_interval: 500ms
scrape_configs:
  - job_name: meshrelay
    scrape_interval: 500ms
    static_configs:
      - targets: [${targets.map((x) => `'${x}'`).join(', ')}]
`;
    writeFileSync(join(dir, 'prometheus.yml'), config);
    const port = await freePort();
    const proc = await spawnProcess({
      name: 'prometheus',
      command: 'prometheus',
      args: [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
    });
    t.after(async () => {
      await proc.stop(5000);
      rmSync(dir, { recursive: true, force: true });
    });
    const prom = new Prometheus(`http://127.0.0.1:${port}`, proc);
    await waitFor(
      async () => {
        try {
          return (await fetch(`${prom.url}/-/ready`)).ok;
        } catch {
          return false;
        }
      },
      { timeoutMs: 30_000, intervalMs: 200, message: 'prometheus did not become ready' },
    );
    return prom;
  }

  async query(expr: string): Promise<PromSample[]> {
    const res = await fetch(`${this.url}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await res.json()) as { status: string; error?: string; data?: { result: PromSample[] } };
    if (body.status !== 'success') throw new Error(`query ${expr} failed: ${body.error ?? res.status}`);
    return body.data?.result ?? [];
  }

  /** Polls a query until `check` accepts its result; returns that result. */
  async waitForQuery(expr: string, check: (r: PromSample[]) => boolean, timeoutMs = 20_000): Promise<PromSample[]> {
    let last: PromSample[] = [];
    await waitFor(async () => check((last = await this.query(expr))), {
      timeoutMs,
      intervalMs: 250,
      message: `prometheus query did not reach the expected result: ${expr}`,
    });
    return last;
  }
}
