import type { Logger } from 'pino';
import { formatResourceKey, type ResourceKey } from '@meshrelay/api';

/**
 * One reason a manifest or a cluster object (or part of one) did not make it
 * into the input snapshot. Everything else still does: a problem never takes
 * its neighbours down.
 */
export interface InputProblem {
  /**
   * Where the problem was found: the file's path relative to the manifests
   * directory ('/' separated) for the file provider; the object's (or the
   * kind's) API path, e.g. `/api/v1/namespaces/bookinfo/services/reviews`, for
   * the kubernetes provider.
   */
  readonly file: string;
  /**
   * 0-based index of the YAML document (or JSON array item) in the file; -1 when the whole file (or an API object) is
   * meant.
   */
  readonly document: number;
  /** Dotted field path inside the document ('' when the document itself is unreadable). */
  readonly path: string;
  readonly message: string;
  /** The cluster object concerned (kubernetes provider), so a problem names its kind, namespace and name. */
  readonly object?: ResourceKey;
}

/**
 * `a/b.yaml document 2 field spec.hosts[0]: must be a hostname`, or for a
 * cluster object `Service.v1 bookinfo/reviews field spec.ports: ...` — one line
 * for logs and CLIs.
 */
export function formatInputProblem(problem: InputProblem): string {
  const located = problem.object ? formatResourceKey(problem.object) : problem.file;
  const where = problem.document < 0 ? located : `${located} document ${problem.document}`;
  const field = problem.path === '' ? '' : ` field ${problem.path}`;
  return `${where}${field}: ${problem.message}`;
}

/** Stable order for problem lists (by file, document, path, message). */
export function compareInputProblems(a: InputProblem, b: InputProblem): number {
  const text = (p: InputProblem): string =>
    `${p.file}\u0000${String(p.document + 1).padStart(8, '0')}\u0000${p.path}\u0000${p.message}`;
  const ta = text(a);
  const tb = text(b);
  return ta < tb ? -1 : ta > tb ? 1 : 0;
}

/** Logs each problem of `next` that `previous` did not have (a problem is logged once, not on every snapshot). */
export function logNewInputProblems(
  logger: Logger,
  cluster: string,
  previous: readonly InputProblem[],
  next: readonly InputProblem[],
): void {
  const known = new Set(previous.map((p) => JSON.stringify(p)));
  for (const problem of next) {
    if (!known.has(JSON.stringify(problem)))
      logger.warn({ cluster, problem }, `input problem: ${formatInputProblem(problem)}`);
  }
}
