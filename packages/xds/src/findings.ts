import { SOURCES_ANNOTATION, type Resource } from '@meshrelay/api';
import type { XdsFinding } from './types.ts';

/** Collects findings; one instance per translation (pure: nothing leaves but the list). */
export class FindingList {
  readonly #items: XdsFinding[] = [];
  readonly #seen = new Set<string>();

  add(resource: Resource, field: string, message: string): void {
    const source = `${resource.kind} ${resource.metadata.namespace ?? ''}/${resource.metadata.name}`;
    const key = `${source}\u0000${field}\u0000${message}`;
    // The same field is met once per port or host it applies to; it is one finding.
    if (this.#seen.has(key)) return;
    this.#seen.add(key);
    const annotation = resource.metadata.annotations?.[SOURCES_ANNOTATION] ?? '';
    this.#items.push({ source, sources: annotation === '' ? [] : annotation.split(','), field, message });
  }

  list(): XdsFinding[] {
    return [...this.#items].sort((a, b) =>
      a.source + a.field < b.source + b.field ? -1 : a.source + a.field > b.source + b.field ? 1 : 0,
    );
  }
}
