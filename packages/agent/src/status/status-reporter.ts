import type { Logger } from 'pino';
import type { relay } from '@meshrelay/api';
import { reportedStatusesOf, type StatusWriter } from './resource-status.ts';

/**
 * Hands the server's status reports to a StatusWriter one at a time. A report that arrives while
 * one is being written replaces any report still waiting (each report is complete, so only the
 * latest matters).
 */
export class StatusReporter {
  readonly #writer: StatusWriter;
  readonly #logger: Logger;
  #pending: relay.v1.IResourceStatuses | undefined;
  #running: Promise<void> | undefined;

  constructor(writer: StatusWriter, logger: Logger) {
    this.#writer = writer;
    this.#logger = logger;
  }

  /** Takes one report; never throws. */
  report(message: relay.v1.IResourceStatuses): void {
    this.#pending = message;
    this.#running ??= this.#drain().finally(() => (this.#running = undefined));
  }

  /** Resolves once every report taken so far is written. */
  async settled(): Promise<void> {
    while (this.#running) await this.#running;
  }

  async #drain(): Promise<void> {
    while (this.#pending) {
      const statuses = reportedStatusesOf(this.#pending);
      this.#pending = undefined;
      await this.#writer
        .write(statuses)
        .catch((err: unknown) => this.#logger.warn({ err }, 'could not write resource statuses'));
    }
  }
}
