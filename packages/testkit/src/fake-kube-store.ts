// The object store behind the fake kube-apiserver: what etcd plus the registry layer of
// kube-apiserver do for the fake. One global resourceVersion counter (like etcd's revision) stamps
// every write; a bounded history of events serves watches from a resourceVersion; optimistic
// concurrency (409 on a stale resourceVersion), no-op updates that do not bump the version,
// generation bumps on spec changes, status-subresource isolation, finalizers and a synchronous
// garbage collector for ownerReferences (asynchronous on a real cluster).

import { randomBytes, randomUUID } from 'node:crypto';
import { applyConfiguration, jsonPatch, mergePatch } from './fake-kube-patch.ts';
import { apiVersionOf, type FakeKubeResourceType } from './fake-kube-resource-types.ts';
import type { FakeKubeMetadata, FakeKubeObject } from './fake-kube-selectors.ts';
import {
  alreadyExists,
  badRequest,
  conflict,
  expired,
  invalid,
  notFound,
  STALE_OBJECT,
  FakeKubeStatusError,
} from './fake-kube-status.ts';

export type FakeKubeEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One committed change; `previous` is the object before a MODIFIED (for selector transitions). */
export interface FakeKubeEvent {
  readonly resourceVersion: number;
  readonly type: FakeKubeEventType;
  readonly resource: FakeKubeResourceType;
  readonly object: FakeKubeObject;
  readonly previous?: FakeKubeObject;
}

export type FakeKubePatchType = 'merge' | 'strategic' | 'json' | 'apply';

export interface FakeKubeWriteOptions {
  readonly subresource?: 'status';
  readonly fieldManager?: string;
  readonly force?: boolean;
}

function objectKey(type: FakeKubeResourceType, namespace: string, name: string): string {
  return `${type.plural}.${type.group}/${namespace}/${name}`;
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}

/** The object without the fields the server owns, for no-op and generation comparisons. */
function comparable(obj: FakeKubeObject, withMetadata: boolean, withStatus: boolean): string {
  const { metadata, status, ...rest } = obj;
  const { resourceVersion: _rv, managedFields: _mf, generation: _g, ...meta } = metadata;
  return canonical({ ...rest, ...(withMetadata ? { metadata: meta } : {}), ...(withStatus ? { status } : {}) });
}

function nowTimestamp(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Holds the objects of every served type; methods throw FakeKubeStatusError as the API would. */
export class FakeKubeStore {
  readonly #objects = new Map<string, FakeKubeObject>();
  readonly #typeOfKey = new Map<string, FakeKubeResourceType>();
  readonly #lastApplied = new Map<string, unknown>();
  readonly #listeners = new Set<(event: FakeKubeEvent) => void>();
  readonly #historySize: number;
  #history: FakeKubeEvent[] = [];
  #resourceVersion = 1;
  #oldestWatchable = 1;

  constructor(historySize: number) {
    this.#historySize = historySize;
  }

  /** The current global resourceVersion. */
  get resourceVersion(): number {
    return this.#resourceVersion;
  }

  /** Watches from a resourceVersion below this answer 410 Expired. */
  get oldestWatchableResourceVersion(): number {
    return this.#oldestWatchable;
  }

  /** Forgets every retained event: a watch from any older resourceVersion now gets 410. */
  compactHistory(): void {
    this.#history = [];
    this.#oldestWatchable = this.#resourceVersion;
  }

  /** Events after `resourceVersion`; throws 410 Expired when some were already forgotten. */
  eventsSince(resourceVersion: number, raw: string): FakeKubeEvent[] {
    if (resourceVersion < this.#oldestWatchable) throw expired(raw, this.#oldestWatchable);
    return this.#history.filter((e) => e.resourceVersion > resourceVersion);
  }

  subscribe(listener: (event: FakeKubeEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  get(type: FakeKubeResourceType, namespace: string, name: string): FakeKubeObject | undefined {
    const obj = this.#objects.get(objectKey(type, namespace, name));
    return obj === undefined ? undefined : structuredClone(obj);
  }

  /** Objects of a type, in one namespace or (undefined) all, sorted by namespace and name. */
  list(type: FakeKubeResourceType, namespace: string | undefined): FakeKubeObject[] {
    const prefix = namespace === undefined ? `${type.plural}.${type.group}/` : objectKey(type, namespace, '');
    return [...this.#objects.entries()]
      .filter(([key]) => key.startsWith(prefix))
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([, obj]) => structuredClone(obj));
  }

  /** POST: 409 AlreadyExists, 404 for a missing namespace; fills uid, timestamps, generation. */
  create(
    type: FakeKubeResourceType,
    namespace: string,
    body: FakeKubeObject,
    options: FakeKubeWriteOptions = {},
    operation: 'Update' | 'Apply' = 'Update',
  ): FakeKubeObject {
    const metadata: FakeKubeMetadata = { ...(body.metadata ?? {}) };
    if (!metadata.name && metadata.generateName)
      metadata.name = metadata.generateName + randomBytes(3).toString('hex').slice(0, 5);
    const name = metadata.name;
    if (!name) throw invalid(type, '', 'metadata.name: Required value: name or generateName is required');
    if (type.namespaced) {
      if (metadata.namespace && metadata.namespace !== namespace) {
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      this.#requireNamespace(namespace);
      metadata.namespace = namespace;
    } else {
      delete metadata.namespace;
    }
    const key = objectKey(type, namespace, name);
    if (this.#objects.has(key)) throw alreadyExists(type, name);
    const created: FakeKubeObject = { ...body, apiVersion: apiVersionOf(type), kind: type.kind, metadata };
    if (type.statusSubresource) delete created.status;
    assertDataSize(type, name, created);
    metadata.uid = randomUUID();
    metadata.creationTimestamp = nowTimestamp();
    metadata.generation = 1;
    delete metadata.deletionTimestamp;
    if (options.fieldManager) metadata.managedFields = [managedField(type, options.fieldManager, operation)];
    return this.#commit(type, key, created, undefined);
  }

  /** PUT: 404 when absent, 409 Conflict on a stale resourceVersion; custom resources require one. */
  replace(
    type: FakeKubeResourceType,
    namespace: string,
    name: string,
    body: FakeKubeObject,
    options: FakeKubeWriteOptions = {},
  ): FakeKubeObject {
    const key = objectKey(type, namespace, name);
    const current = this.#objects.get(key);
    if (current === undefined) throw notFound(type, name);
    if (body.metadata?.name !== undefined && body.metadata.name !== name) {
      throw badRequest(`the name of the object (${body.metadata.name}) does not match the name on the URL (${name})`);
    }
    const requested = body.metadata?.resourceVersion;
    if (requested === undefined || requested === '') {
      if (!type.builtIn)
        throw invalid(type, name, 'metadata.resourceVersion: Invalid value: 0x0: must be specified for an update');
    } else if (requested !== current.metadata.resourceVersion) {
      throw conflict(type, name, STALE_OBJECT);
    }
    return this.#update(type, key, current, body, 'Update', options);
  }

  /** PATCH in one of the four content types; `apply` creates the object when it is absent. */
  patch(
    type: FakeKubeResourceType,
    namespace: string,
    name: string,
    patchType: FakeKubePatchType,
    patchBody: unknown,
    options: FakeKubeWriteOptions = {},
  ): FakeKubeObject {
    const key = objectKey(type, namespace, name);
    const current = this.#objects.get(key);
    if (patchType === 'apply') return this.#apply(type, namespace, name, key, current, patchBody, options);
    if (current === undefined) throw notFound(type, name);
    const patched = (
      patchType === 'json' ? jsonPatch(current, patchBody) : mergePatch(current, patchBody)
    ) as FakeKubeObject;
    if (patched.metadata?.resourceVersion !== current.metadata.resourceVersion) {
      throw conflict(type, name, STALE_OBJECT);
    }
    return this.#update(type, key, current, patched, 'Update', options);
  }

  /** DELETE: 404 when absent, 409 on failed preconditions; with finalizers only marks deletion. */
  delete(
    type: FakeKubeResourceType,
    namespace: string,
    name: string,
    preconditions?: { resourceVersion?: string; uid?: string },
  ): FakeKubeObject {
    const key = objectKey(type, namespace, name);
    const current = this.#objects.get(key);
    if (current === undefined) throw notFound(type, name);
    if (
      (preconditions?.resourceVersion && preconditions.resourceVersion !== current.metadata.resourceVersion) ||
      (preconditions?.uid && preconditions.uid !== current.metadata.uid)
    ) {
      throw conflict(type, name, 'the precondition was not met');
    }
    if ((current.metadata.finalizers ?? []).length > 0) {
      if (current.metadata.deletionTimestamp) return structuredClone(current);
      const marked = structuredClone(current);
      marked.metadata.deletionTimestamp = nowTimestamp();
      return this.#commit(type, key, marked, current);
    }
    return this.#remove(type, key, current);
  }

  /** Test set-up: create or overwrite without checks (fills server-owned metadata). */
  put(type: FakeKubeResourceType, obj: FakeKubeObject): FakeKubeObject {
    const namespace = type.namespaced ? (obj.metadata.namespace ?? 'default') : '';
    const name = obj.metadata.name ?? '';
    const key = objectKey(type, namespace, name);
    const current = this.#objects.get(key);
    const next = structuredClone({ ...obj, apiVersion: apiVersionOf(type), kind: type.kind }) as FakeKubeObject;
    if (type.namespaced) next.metadata.namespace = namespace;
    next.metadata.uid = current?.metadata.uid ?? next.metadata.uid ?? randomUUID();
    next.metadata.creationTimestamp =
      current?.metadata.creationTimestamp ?? next.metadata.creationTimestamp ?? nowTimestamp();
    next.metadata.generation = (current?.metadata.generation ?? 0) + 1;
    return this.#commit(type, key, next, current);
  }

  /** Test set-up: delete without checks or finalizers; false when absent. */
  remove(type: FakeKubeResourceType, namespace: string, name: string): boolean {
    const key = objectKey(type, namespace, name);
    const current = this.#objects.get(key);
    if (current === undefined) return false;
    this.#remove(type, key, current);
    return true;
  }

  #requireNamespace(namespace: string): void {
    if (!this.#objects.has(`namespaces.//${namespace}`)) {
      throw new FakeKubeStatusError(404, 'NotFound', `namespaces "${namespace}" not found`, {
        name: namespace,
        kind: 'namespaces',
      });
    }
  }

  #apply(
    type: FakeKubeResourceType,
    namespace: string,
    name: string,
    key: string,
    current: FakeKubeObject | undefined,
    patchBody: unknown,
    options: FakeKubeWriteOptions,
  ): FakeKubeObject {
    const manager = options.fieldManager;
    if (!manager) throw invalid(type, name, 'fieldManager: Required value: is required for apply patch');
    const applied = patchBody as FakeKubeObject;
    if (applied?.apiVersion !== apiVersionOf(type) || applied.kind !== type.kind) {
      throw badRequest(`apply: apiVersion/kind must be ${apiVersionOf(type)}/${type.kind}`);
    }
    if (applied.metadata?.name !== name) throw badRequest(`apply: metadata.name must be "${name}"`);
    const lastKey = `${key}\u0000${manager}\u0000${options.subresource ?? ''}`;
    const previous = this.#lastApplied.get(lastKey);
    this.#lastApplied.set(lastKey, structuredClone(applied));
    if (current === undefined) {
      if (options.subresource === 'status') throw notFound(type, name);
      return this.create(type, namespace, structuredClone(applied), { fieldManager: manager }, 'Apply');
    }
    const next =
      options.subresource === 'status'
        ? {
            ...current,
            status: applyConfiguration(
              current.status,
              applied.status,
              (previous as FakeKubeObject | undefined)?.status,
            ),
          }
        : (applyConfiguration(current, applied, previous) as FakeKubeObject);
    return this.#update(type, key, current, next as FakeKubeObject, 'Apply', options);
  }

  #update(
    type: FakeKubeResourceType,
    key: string,
    current: FakeKubeObject,
    candidate: FakeKubeObject,
    operation: string,
    options: FakeKubeWriteOptions,
  ): FakeKubeObject {
    const next: FakeKubeObject =
      options.subresource === 'status'
        ? { ...structuredClone(current), status: structuredClone(candidate.status) }
        : { ...structuredClone(candidate), apiVersion: current.apiVersion, kind: current.kind };
    if (next.status === undefined) delete next.status;
    if (options.subresource !== 'status' && type.statusSubresource) {
      if (current.status === undefined) delete next.status;
      else next.status = structuredClone(current.status);
    }
    const { name, namespace, uid, creationTimestamp, deletionTimestamp, generation, managedFields } = current.metadata;
    next.metadata = { ...next.metadata, name, namespace, uid, creationTimestamp, generation, managedFields };
    if (namespace === undefined) delete next.metadata.namespace;
    if (deletionTimestamp) next.metadata.deletionTimestamp = deletionTimestamp;
    else delete next.metadata.deletionTimestamp;
    assertDataSize(type, name ?? '', next);
    if (comparable(next, true, true) === comparable(current, true, true)) return structuredClone(current);
    if (comparable(next, false, !type.statusSubresource) !== comparable(current, false, !type.statusSubresource)) {
      next.metadata.generation = (generation ?? 0) + 1;
    }
    if (options.fieldManager) {
      next.metadata.managedFields = upsertManagedField(
        managedFields,
        managedField(type, options.fieldManager, operation, options.subresource),
      );
    }
    if (deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) return this.#remove(type, key, next);
    return this.#commit(type, key, next, current);
  }

  #remove(type: FakeKubeResourceType, key: string, current: FakeKubeObject): FakeKubeObject {
    this.#objects.delete(key);
    for (const k of this.#lastApplied.keys()) if (k.startsWith(`${key}\u0000`)) this.#lastApplied.delete(k);
    const gone = structuredClone(current);
    gone.metadata.resourceVersion = String(++this.#resourceVersion);
    this.#record({ resourceVersion: this.#resourceVersion, type: 'DELETED', resource: type, object: gone });
    this.#collectDependents(current.metadata.uid);
    return structuredClone(gone);
  }

  /** Background-propagation garbage collection: dependents whose owner is gone are deleted. */
  #collectDependents(ownerUid: string | undefined): void {
    if (ownerUid === undefined) return;
    for (const [key, obj] of [...this.#objects.entries()]) {
      if (!(obj.metadata.ownerReferences ?? []).some((ref) => ref.uid === ownerUid)) continue;
      const type = this.#typeOfKey.get(key);
      if (type) this.#remove(type, key, obj);
    }
  }

  #commit(
    type: FakeKubeResourceType,
    key: string,
    next: FakeKubeObject,
    previous: FakeKubeObject | undefined,
  ): FakeKubeObject {
    next.metadata.resourceVersion = String(++this.#resourceVersion);
    this.#objects.set(key, next);
    this.#typeOfKey.set(key, type);
    this.#record({
      resourceVersion: this.#resourceVersion,
      type: previous === undefined ? 'ADDED' : 'MODIFIED',
      resource: type,
      object: structuredClone(next),
      ...(previous === undefined ? {} : { previous: structuredClone(previous) }),
    });
    return structuredClone(next);
  }

  #record(event: FakeKubeEvent): void {
    this.#history.push(event);
    while (this.#history.length > this.#historySize) {
      this.#oldestWatchable = this.#history.shift()!.resourceVersion;
    }
    for (const listener of [...this.#listeners]) listener(event);
  }
}

/** kube-apiserver's limit on the data of a ConfigMap or Secret (keys and values, decoded). */
export const FAKE_KUBE_MAX_DATA_BYTES = 1024 * 1024;

/** 422 as kube-apiserver's validation answers a ConfigMap or Secret whose data is over 1 MiB. */
function assertDataSize(type: FakeKubeResourceType, name: string, obj: FakeKubeObject): void {
  if (!type.builtIn || (type.kind !== 'ConfigMap' && type.kind !== 'Secret')) return;
  let total = 0;
  const add = (map: unknown, decode: (v: string) => number): void => {
    for (const [key, value] of Object.entries((map ?? {}) as Record<string, string>))
      total += key.length + decode(String(value));
  };
  const base64 = (v: string): number => Buffer.from(v, 'base64').length;
  add(obj['data'], type.kind === 'Secret' ? base64 : (v) => Buffer.byteLength(v));
  add(obj['binaryData'], base64);
  add(obj['stringData'], (v) => Buffer.byteLength(v));
  if (total > FAKE_KUBE_MAX_DATA_BYTES)
    throw invalid(type, name, `[]: Too long: must have at most ${FAKE_KUBE_MAX_DATA_BYTES} bytes`);
}

function managedField(
  type: FakeKubeResourceType,
  manager: string,
  operation: string,
  subresource?: string,
): Record<string, unknown> {
  return {
    manager,
    operation,
    apiVersion: apiVersionOf(type),
    time: nowTimestamp(),
    fieldsType: 'FieldsV1',
    fieldsV1: {},
    ...(subresource ? { subresource } : {}),
  };
}

function upsertManagedField(
  fields: Array<Record<string, unknown>> | undefined,
  entry: Record<string, unknown>,
): Array<Record<string, unknown>> {
  const same = (f: Record<string, unknown>): boolean =>
    f.manager === entry.manager && f.operation === entry.operation && f.subresource === entry.subresource;
  return [...(fields ?? []).filter((f) => !same(f)), entry];
}
