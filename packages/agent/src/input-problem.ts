/**
 * One reason a manifest (or part of one) did not make it into the input
 * snapshot. Everything else still does: a problem never takes its neighbours down.
 */
export interface InputProblem {
  /** Path of the file relative to the manifests directory ('/' separated). */
  readonly file: string;
  /** 0-based index of the YAML document (or JSON array item) in the file; -1 when the whole file is affected. */
  readonly document: number;
  /** Dotted field path inside the document ('' when the document itself is unreadable). */
  readonly path: string;
  readonly message: string;
}

/** `a/b.yaml document 2 field spec.hosts[0]: must be a hostname` — one line for logs and CLIs. */
export function formatInputProblem(problem: InputProblem): string {
  const where = problem.document < 0 ? problem.file : `${problem.file} document ${problem.document}`;
  const field = problem.path === '' ? '' : ` field ${problem.path}`;
  return `${where}${field}: ${problem.message}`;
}

/** Stable order for problem lists (by file, document, path, message). */
export function compareInputProblems(a: InputProblem, b: InputProblem): number {
  const text = (p: InputProblem): string => `${p.file}\u0000${String(p.document + 1).padStart(8, '0')}\u0000${p.path}\u0000${p.message}`;
  const ta = text(a);
  const tb = text(b);
  return ta < tb ? -1 : ta > tb ? 1 : 0;
}
