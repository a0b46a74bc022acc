/**
 * Per Redis key, the number of the last memory change, so that a Redis reply is applied only if
 * memory did not change after the request was made. A key's mark is kept only while it matters:
 * while memory holds something for the key, Redis has not seen its state, or an operation that
 * compares against the mark is in flight. Afterwards the mark is dropped, so clusters that come and
 * go do not leave an entry behind each. Dropping is safe because a later operation starts from a
 * fresh mark and any memory change after it gets a new, higher number.
 */
export class MutationMarks {
  #count = 0;
  readonly #marks = new Map<string, number>();
  /** Operations in flight per key that compare against its mark. */
  readonly #readers = new Map<string, number>();

  /** Records a memory change of `key`; returns its number. */
  bump(key: string): number {
    const mark = ++this.#count;
    this.#marks.set(key, mark);
    return mark;
  }

  current(key: string): number {
    return this.#marks.get(key) ?? 0;
  }

  /** Starts an operation that will compare against the key's mark; pair with end(). Returns the mark now. */
  begin(key: string): number {
    this.#readers.set(key, (this.#readers.get(key) ?? 0) + 1);
    return this.current(key);
  }

  /** Ends an operation started with begin(); `idle` says whether the store keeps nothing for the key now. */
  end(key: string, idle: boolean): void {
    const left = (this.#readers.get(key) ?? 1) - 1;
    if (left > 0) this.#readers.set(key, left);
    else this.#readers.delete(key);
    this.prune(key, idle);
  }

  /** Drops the key's mark when the store keeps nothing for it and nothing in flight compares against it. */
  prune(key: string, idle: boolean): void {
    if (idle && !this.#readers.has(key)) this.#marks.delete(key);
  }

  /** Keys with a mark or an operation in flight. */
  size(): number {
    return new Set([...this.#marks.keys(), ...this.#readers.keys()]).size;
  }
}
