import type { TranslationProblem } from './types.ts';

function problemKey(p: TranslationProblem): string {
  return `${p.cluster ?? ''}\u0000${p.resource ?? ''}\u0000${p.reason}`;
}

/** Collects problems during one translation, dropping exact repeats. */
export class ProblemSink {
  private readonly seen = new Set<string>();
  private readonly list: TranslationProblem[] = [];

  add(problem: TranslationProblem): void {
    const key = problemKey(problem);
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.list.push(problem);
  }

  /** Problems in the order they were added. */
  all(): readonly TranslationProblem[] {
    return this.list;
  }

  /** Problems in a stable order: by cluster, resource, reason. */
  sorted(): TranslationProblem[] {
    return [...this.list].sort((a, b) => (problemKey(a) < problemKey(b) ? -1 : problemKey(a) > problemKey(b) ? 1 : 0));
  }
}
