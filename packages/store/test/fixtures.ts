import {
  buildInputSnapshot,
  buildOutputSnapshot,
  type InputSnapshot,
  type OutputSnapshot,
  type Resource,
} from '@meshrelay/api';
import { pino, type Logger } from 'pino';

export function service(name: string, port = 80): Resource {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default' }, spec: { ports: [{ port }] } };
}

export interface InputOptions {
  readonly epoch?: string;
  readonly generation?: number;
  readonly services?: readonly string[];
  readonly port?: number;
}

/** An input snapshot of `cluster` holding one Service per name (default: one named after the cluster). */
export function inputOf(cluster: string, options: InputOptions = {}): InputSnapshot {
  const names = options.services ?? [`${cluster}-svc`];
  return buildInputSnapshot({
    cluster,
    epoch: options.epoch ?? 'epoch-1',
    generation: options.generation ?? 1,
    resources: names.map((name) => service(name, options.port)),
  });
}

/** An output snapshot of `cluster` built from `inputs` (its provenance). */
export function outputOf(cluster: string, inputs: readonly InputSnapshot[]): OutputSnapshot {
  return buildOutputSnapshot({
    cluster,
    resources: [
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'ServiceEntry',
        metadata: { name: `from-${inputs.length}`, namespace: 'istio-system' },
        spec: { hosts: inputs.map((i) => `${i.cluster}.mesh.internal`) },
      },
    ],
    provenance: inputs.map((i) => ({ cluster: i.cluster, inputHash: i.hash })),
  });
}

/** A logger that keeps every line it writes, parsed, for assertions on what was logged. */
export function capturingLogger(): { logger: Logger; records: Record<string, unknown>[] } {
  const records: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'debug' },
    { write: (line: string) => void records.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { logger, records };
}
