import type { Logger } from 'pino';

/** Listeners of one kind of event. A listener that throws is logged and does not stop the others. */
export class Listeners<T> {
  readonly #listeners = new Set<(value: T) => void>();
  readonly #log: Logger;
  readonly #what: string;

  constructor(log: Logger, what: string) {
    this.#log = log;
    this.#what = what;
  }

  /** Adds `listener`; returns the function that removes it. */
  add(listener: (value: T) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  emit(value: T): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(value);
      } catch (err) {
        this.#log.error({ err }, `a ${this.#what} listener threw`);
      }
    }
  }

  clear(): void {
    this.#listeners.clear();
  }
}
