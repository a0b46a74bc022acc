import type { TranslationProblem } from './types.ts';

/** Collects problems during one translation, dropping exact repeats. */
export class ProblemSink {
  private readonly seen = new Set<string>();
  private readonly list: TranslationProblem[] = [];

  add(problem: TranslationProblem): void {
    const key = `${problem.cluster ?? ''}\u0000${problem.resource ?? ''}\u0000${problem.reason}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.list.push(problem);
  }

  /** Problems in a stable order: by cluster, resource, reason. */
  sorted(): TranslationProblem[] {
    const key = (p: TranslationProblem): string => `${p.cluster ?? ''}\u0000${p.resource ?? ''}\u0000${p.reason}`;
    return [...this.list].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  }
}
