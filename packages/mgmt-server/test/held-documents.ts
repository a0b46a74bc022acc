/** The real directory store, whose writes wait until the test lets them through (for tests of kept contributions). */
import { DirectoryDocumentStore, documentBytes, type DocumentBody } from '@meshrelay/registry';

export class HeldDocuments extends DirectoryDocumentStore {
  /** Names whose write started, in order. */
  readonly started: string[] = [];
  /** `name@hash` of every record written, in order. */
  readonly written: string[] = [];
  #release!: () => void;
  readonly #gate = new Promise<void>((resolve) => (this.#release = resolve));

  override async put(name: string, body: DocumentBody): Promise<void> {
    this.started.push(name);
    await this.#gate;
    const bytes = await documentBytes(body);
    await super.put(name, bytes);
    this.written.push(`${name}@${(JSON.parse(String(bytes)) as { hash: string }).hash}`);
  }

  /** Lets every held write, and every later one, through. */
  release(): void {
    this.#release();
  }
}
