// Gloo statuses tell the truth about the data plane too: when an agent reports that its proxies
// cannot take a field of an output (a redirect, LEAST_REQUEST, ...), the Gloo resources that
// output came from get a WARNING for that cluster, naming the field.

import type { ResourceState, ResourceStatus } from '@meshrelay/translator';
import type { DataPlaneRecord } from './data-plane-reports.ts';

/** Per source id, per consuming cluster: the findings' lines. */
function notesBySource(records: readonly DataPlaneRecord[]): Map<string, Map<string, string[]>> {
  const notes = new Map<string, Map<string, string[]>>();
  for (const record of records) {
    for (const f of record.findings) {
      const line = `${f.source}: ${f.field}: ${f.message}`;
      for (const id of f.sources) {
        let byCluster = notes.get(id);
        if (!byCluster) notes.set(id, (byCluster = new Map()));
        const lines = byCluster.get(record.cluster) ?? [];
        if (!lines.includes(line)) lines.push(line);
        byCluster.set(record.cluster, lines);
      }
    }
  }
  return notes;
}

/**
 * `state` with the data plane's lines added: ACCEPTED becomes WARNING; worse approvals stay, with the lines appended.
 */
function withLines(state: ResourceState | undefined, observedGeneration: number, text: string): ResourceState {
  if (state === undefined || state.approval === 'ACCEPTED')
    return { observedGeneration, approval: 'WARNING', message: text };
  return { ...state, message: state.message === '' ? text : `${state.message}; ${text}` };
}

/**
 * The statuses with the data plane's findings folded in. A finding counts for a resource
 * only in a cluster that resource really contributed outputs to (an agent cannot mark
 * another team's resource through a cluster it does not reach). Statuses without findings
 * are returned as the same objects, so unchanged statuses stay cheap to compare.
 */
export function withDataPlaneFindings(
  statuses: readonly ResourceStatus[],
  records: readonly DataPlaneRecord[],
): readonly ResourceStatus[] {
  const notes = notesBySource(records);
  if (notes.size === 0) return statuses;
  return statuses.map((s) => {
    const byCluster = notes.get(s.source);
    if (byCluster === undefined) return s;
    const reached = new Set(s.outputs.map((o) => o.cluster));
    const clusters: Record<string, ResourceState> = { ...s.clusters };
    const summary: string[] = [];
    for (const [cluster, lines] of [...byCluster].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (!reached.has(cluster)) continue;
      const text = `proxies in ${cluster} cannot take ${lines.join('; ')}`;
      clusters[cluster] = withLines(clusters[cluster], s.state.observedGeneration, text);
      summary.push(text);
    }
    if (summary.length === 0) return s;
    return { ...s, clusters, state: withLines(s.state, s.state.observedGeneration, summary.join('; ')) };
  });
}

/** Caches `withDataPlaneFindings` on the identity of the statuses and the reports' version. */
export class DataPlaneStatusView {
  #statuses: readonly ResourceStatus[] | undefined;
  #version = -1;
  #result: readonly ResourceStatus[] = [];

  view(
    statuses: readonly ResourceStatus[],
    version: number,
    records: () => readonly DataPlaneRecord[],
  ): readonly ResourceStatus[] {
    if (statuses !== this.#statuses || version !== this.#version) {
      this.#statuses = statuses;
      this.#version = version;
      this.#result = withDataPlaneFindings(statuses, records());
    }
    return this.#result;
  }
}
