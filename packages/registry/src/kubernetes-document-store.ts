import { createHash, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { MeshrelayError } from '@meshrelay/api';
import {
  MESHRELAY_MANAGED_LABELS,
  kubeErrorCode,
  kubeFailure,
  retryTransient,
  type KubernetesRegistryApis,
} from './kubernetes-objects.ts';
import {
  assertDocumentName,
  documentBytes,
  pollDocumentChanges,
  type DocumentBody,
  type DocumentRevision,
  type SharedDocumentStore,
} from './shared-documents.ts';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** Which collection an object belongs to (`stream-claims`, `held-outputs`, `contributions`). */
export const SHARED_STATE_LABEL = 'meshrelay.io/shared-state';
/** `index` (what a document is now) or `chunk` (a slice of a large body). */
export const SHARED_STATE_PART_LABEL = 'meshrelay.io/part';
/** sha256 of the document name (names may be longer than a label value may be). */
export const SHARED_DOCUMENT_LABEL = 'meshrelay.io/document';
export const SHARED_DOCUMENT_NAME_ANNOTATION = 'meshrelay.io/document-name';
/**
 * Compressed bytes per object. kube-apiserver refuses a ConfigMap whose data exceeds 1 MiB
 * (1048576 bytes, keys included); this leaves room for the other keys and metadata.
 */
export const MAX_CHUNK_BYTES = 768 * 1024;
const READ_ATTEMPTS = 4;
const WRITE_ATTEMPTS = 4;

interface IndexData {
  readonly generation: string;
  readonly chunks: number;
  readonly sha256: string;
  /** The compressed body when it fits in the index itself (chunks = 0). */
  readonly inline: Buffer | undefined;
}

/**
 * Documents as ConfigMaps in the management namespace. Each document has an index ConfigMap
 * `meshrelay-<collection>-<name>`; a compressed body up to MAX_CHUNK_BYTES sits in the index,
 * a larger one in chunk ConfigMaps `<index>.g<generation>.<i>` written BEFORE the index is
 * replaced to name their generation — so a reader follows one index to one complete generation,
 * never a torn copy (and checks the sha256 the index names). The replaced generation's chunks are
 * removed afterwards; a reader that lost them to a newer write reads the new index again.
 * The index is replaced without a resourceVersion: the last writer wins, atomically.
 */
export class KubernetesDocumentStore implements SharedDocumentStore {
  readonly #apis: KubernetesRegistryApis;
  readonly #namespace: string;
  readonly #collection: string;

  constructor(apis: KubernetesRegistryApis, namespace: string, collection: string) {
    assertDocumentName(collection);
    this.#apis = apis;
    this.#namespace = namespace;
    this.#collection = collection;
  }

  get location(): string {
    return `ConfigMaps labelled ${SHARED_STATE_LABEL}=${this.#collection} in namespace ${this.#namespace}`;
  }

  async put(name: string, body: DocumentBody): Promise<void> {
    assertDocumentName(name);
    const packed = await gzipAsync(await documentBytes(body));
    const previous = await this.#readIndex(name);
    const generation = randomBytes(6).toString('hex');
    const chunks = packed.length <= MAX_CHUNK_BYTES ? 0 : Math.ceil(packed.length / MAX_CHUNK_BYTES);
    for (let i = 0; i < chunks; i++) {
      await this.#create(
        this.#chunkObject(name, generation, i, packed.subarray(i * MAX_CHUNK_BYTES, (i + 1) * MAX_CHUNK_BYTES)),
      );
    }
    await this.#upsert(
      this.#indexObject(name, {
        generation,
        chunks,
        sha256: sha256(packed),
        inline: chunks === 0 ? packed : undefined,
      }),
    );
    if (previous && previous.chunks > 0) await this.#deleteChunks(name, previous.generation);
  }

  async get(name: string): Promise<Buffer | undefined> {
    assertDocumentName(name);
    for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
      const index = await this.#readIndex(name);
      if (!index) return undefined;
      const packed = index.inline ?? (await this.#readChunks(name, index));
      // Chunks gone or not matching: a newer write replaced this generation meanwhile; follow it.
      if (packed === undefined || sha256(packed) !== index.sha256) continue;
      return gunzipAsync(packed);
    }
    throw new MeshrelayError(
      'MESHRELAY_ERR_UNAVAILABLE',
      `shared document "${name}" in ${this.location} kept changing while it was read`,
    );
  }

  list(): Promise<DocumentRevision[]> {
    return this.#revisions(false);
  }

  async #revisions(fromWatchCache: boolean): Promise<DocumentRevision[]> {
    const items = await this.#list(`${SHARED_STATE_PART_LABEL}=index`, fromWatchCache);
    return items
      .map((cm) => ({
        name: cm.metadata?.annotations?.[SHARED_DOCUMENT_NAME_ANNOTATION] ?? '',
        revision: cm.metadata?.resourceVersion ?? '',
      }))
      .filter((d) => d.name !== '')
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  async delete(name: string): Promise<void> {
    assertDocumentName(name);
    await this.#delete(this.#indexName(name));
    await this.#deleteChunks(name, undefined);
  }

  watch(onChange: (names: string[]) => void, intervalMs: number, onError: (err: unknown) => void): () => void {
    // resourceVersion=0 lets kube-apiserver answer the frequent looks from its watch cache instead of
    // etcd; a look that lags reports the change at the next one (readers re-read with a fresh get).
    return pollDocumentChanges(() => this.#revisions(true), onChange, intervalMs, onError);
  }

  #indexName(name: string): string {
    return `meshrelay-${this.#collection}-${name}`;
  }

  #labels(name: string, part: 'index' | 'chunk'): Record<string, string> {
    return {
      ...MESHRELAY_MANAGED_LABELS,
      [SHARED_STATE_LABEL]: this.#collection,
      [SHARED_STATE_PART_LABEL]: part,
      [SHARED_DOCUMENT_LABEL]: documentLabel(name),
    };
  }

  #indexObject(name: string, index: IndexData): V1ConfigMap {
    return {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: this.#indexName(name),
        namespace: this.#namespace,
        labels: this.#labels(name, 'index'),
        annotations: { [SHARED_DOCUMENT_NAME_ANNOTATION]: name },
      },
      data: { generation: index.generation, chunks: String(index.chunks), sha256: index.sha256 },
      ...(index.inline ? { binaryData: { body: index.inline.toString('base64') } } : {}),
    };
  }

  #chunkObject(name: string, generation: string, i: number, bytes: Buffer): V1ConfigMap {
    return {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: `${this.#indexName(name)}.g${generation}.${i}`,
        namespace: this.#namespace,
        labels: { ...this.#labels(name, 'chunk'), 'meshrelay.io/generation': generation },
      },
      binaryData: { part: bytes.toString('base64') },
    };
  }

  async #readIndex(name: string): Promise<IndexData | undefined> {
    const cm = await this.#read(this.#indexName(name));
    if (!cm) return undefined;
    const data = cm.data ?? {};
    const chunks = Number(data['chunks']);
    const body = cm.binaryData?.['body'];
    if (
      !Number.isInteger(chunks) ||
      chunks < 0 ||
      typeof data['sha256'] !== 'string' ||
      (chunks === 0 && body === undefined)
    ) {
      throw new MeshrelayError(
        'MESHRELAY_ERR_INTERNAL',
        `shared document "${name}": ConfigMap ${this.#namespace}/${this.#indexName(name)} is not a valid index (data.chunks, data.sha256, binaryData.body)`,
      );
    }
    return {
      generation: data['generation'] ?? '',
      chunks,
      sha256: data['sha256'],
      inline: chunks === 0 && body !== undefined ? Buffer.from(body, 'base64') : undefined,
    };
  }

  /** The concatenated chunks of the index's generation, or undefined when one is gone. */
  async #readChunks(name: string, index: IndexData): Promise<Buffer | undefined> {
    const parts: Buffer[] = [];
    for (let i = 0; i < index.chunks; i++) {
      const cm = await this.#read(`${this.#indexName(name)}.g${index.generation}.${i}`);
      const part = cm?.binaryData?.['part'];
      if (part === undefined) return undefined;
      parts.push(Buffer.from(part, 'base64'));
    }
    return Buffer.concat(parts);
  }

  /** Removes the chunks of one generation, or of every generation (undefined). */
  async #deleteChunks(name: string, generation: string | undefined): Promise<void> {
    const selector = `${SHARED_STATE_PART_LABEL}=chunk,${SHARED_DOCUMENT_LABEL}=${documentLabel(name)}${generation ? `,meshrelay.io/generation=${generation}` : ''}`;
    for (const cm of await this.#list(selector)) await this.#delete(cm.metadata?.name ?? '');
  }

  async #read(objectName: string): Promise<V1ConfigMap | undefined> {
    try {
      return await retryTransient(() =>
        this.#apis.core.readNamespacedConfigMap({ name: objectName, namespace: this.#namespace }),
      );
    } catch (err) {
      if (kubeErrorCode(err) === 404) return undefined;
      throw kubeFailure(err, `read ConfigMap ${this.#namespace}/${objectName}`);
    }
  }

  async #list(selector: string, fromWatchCache = false): Promise<V1ConfigMap[]> {
    const labelSelector = `${SHARED_STATE_LABEL}=${this.#collection},${selector}`;
    const request = { namespace: this.#namespace, labelSelector, ...(fromWatchCache ? { resourceVersion: '0' } : {}) };
    try {
      return (await retryTransient(() => this.#apis.core.listNamespacedConfigMap(request))).items;
    } catch (err) {
      throw kubeFailure(err, `list ConfigMaps ${labelSelector} in ${this.#namespace}`);
    }
  }

  async #create(body: V1ConfigMap): Promise<void> {
    try {
      await retryTransient(() => this.#apis.core.createNamespacedConfigMap({ namespace: this.#namespace, body }));
    } catch (err) {
      throw kubeFailure(err, `create ConfigMap ${this.#namespace}/${body.metadata?.name ?? ''}`);
    }
  }

  /** Replace without a resourceVersion (last write wins); create when absent; replace again when a create raced us. */
  async #upsert(body: V1ConfigMap): Promise<void> {
    const name = body.metadata?.name ?? '';
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      try {
        await retryTransient(() =>
          this.#apis.core.replaceNamespacedConfigMap({ name, namespace: this.#namespace, body }),
        );
        return;
      } catch (err) {
        if (kubeErrorCode(err) !== 404) throw kubeFailure(err, `replace ConfigMap ${this.#namespace}/${name}`);
      }
      try {
        await retryTransient(() => this.#apis.core.createNamespacedConfigMap({ namespace: this.#namespace, body }));
        return;
      } catch (err) {
        if (kubeErrorCode(err) !== 409) throw kubeFailure(err, `create ConfigMap ${this.#namespace}/${name}`);
      }
    }
    throw new MeshrelayError(
      'MESHRELAY_ERR_UNAVAILABLE',
      `ConfigMap ${this.#namespace}/${name} was created and deleted under this writer ${WRITE_ATTEMPTS} times`,
    );
  }

  async #delete(objectName: string): Promise<void> {
    try {
      await retryTransient(() =>
        this.#apis.core.deleteNamespacedConfigMap({ name: objectName, namespace: this.#namespace }),
      );
    } catch (err) {
      if (kubeErrorCode(err) !== 404) throw kubeFailure(err, `delete ConfigMap ${this.#namespace}/${objectName}`);
    }
  }
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function documentLabel(name: string): string {
  return createHash('sha256').update(name).digest('hex').slice(0, 40);
}
