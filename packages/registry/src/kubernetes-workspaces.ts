// The management plane's Workspaces as Workspace CRs (admin.gloo.solo.io/v2) in the management
// namespace, the way Gloo keeps them: what `--workspaces-file` gives on a local run, read here
// from the Kubernetes API and followed as they change.
//
// An invalid Workspace (a field of the wrong type, an unknown field) is not handed to
// translation: the previous valid version of that Workspace stays in force and the problem names
// the object and the field. Dropping it instead would move its namespaces out of every workspace
// at once, which invalidates every resource in them on every cluster; keeping the last good one
// is what a typo in `kubectl apply` should cost. A Workspace that was never valid is left out.

import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { canonicalJson, normalizeResource, type Resource } from '@meshrelay/api';
import { validateInputResource } from '@meshrelay/translator';
import {
  startKubernetesResourceWatch,
  type KubernetesResourceWatch,
  type WatchedObjects,
  type WatchedResourceKind,
} from './kubernetes-resource-watch.ts';

export const WORKSPACE_API: WatchedResourceKind = {
  group: 'admin.gloo.solo.io',
  version: 'v2',
  plural: 'workspaces',
  kind: 'Workspace',
};

/** Workspaces followed from a source that may change (the Kubernetes API). */
export interface WorkspaceSource {
  /**
   * The Workspaces in force, sorted by name. The same array (by identity) until they change, so
   * a caller can tell a change by comparing references. The caller must not mutate it.
   */
  list(): readonly Resource[];
  /** Why Workspace objects are not (or only in a previous version) in force; one line each, sorted. */
  problems(): readonly string[];
  /** Called after list() or problems() changed. Returns an unsubscribe function. */
  onChange(listener: () => void): () => void;
  close(): Promise<void>;
}

export interface KubernetesWorkspaceOptions {
  readonly kubeConfig: KubeConfig;
  /** The management namespace. */
  readonly namespace: string;
  readonly logger: Logger;
  readonly retryBaseMs?: number;
  readonly retryMaxMs?: number;
  readonly initialSyncTimeoutMs?: number;
}

/** Starts following the Workspace CRs; resolves with the first list in force (see startKubernetesResourceWatch). */
export async function startKubernetesWorkspaces(options: KubernetesWorkspaceOptions): Promise<WorkspaceSource> {
  const workspaces = new WorkspaceSet(options.namespace, options.logger);
  const watch = await startKubernetesResourceWatch({ ...options, kind: WORKSPACE_API }, (current) =>
    workspaces.apply(current),
  );
  return workspaces.attach(watch);
}

interface Judged {
  readonly resource: Resource;
  readonly problem?: string;
}

/** Turns the watched objects into the Workspaces in force; pure apart from logging. */
export class WorkspaceSet implements WorkspaceSource {
  readonly #namespace: string;
  readonly #logger: Logger;
  readonly #listeners = new Set<() => void>();
  /** The last valid version of each Workspace, by name. */
  readonly #good = new Map<string, Resource>();
  #list: readonly Resource[] = [];
  #problems: readonly string[] = [];
  #watch: KubernetesResourceWatch | undefined;

  constructor(namespace: string, logger: Logger) {
    this.#namespace = namespace;
    this.#logger = logger;
  }

  attach(watch: KubernetesResourceWatch): this {
    this.#watch = watch;
    return this;
  }

  list(): readonly Resource[] {
    return this.#list;
  }

  problems(): readonly string[] {
    return this.#problems;
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    await this.#watch?.close();
  }

  /** Takes in the whole current set of Workspace objects. */
  apply(current: WatchedObjects): void {
    const present = new Set<string>();
    const problems: string[] = [];
    for (const obj of current.objects) {
      const name = obj.metadata?.name ?? '';
      present.add(name);
      const judged = judgeWorkspace(obj);
      if (judged.problem === undefined) {
        this.#good.set(name, judged.resource);
        continue;
      }
      const kept = this.#good.has(name)
        ? 'the previous valid version stays in force'
        : 'not in force (it never was valid)';
      problems.push(`Workspace ${this.#namespace}/${name}: ${judged.problem}; ${kept}`);
    }
    for (const name of [...this.#good.keys()]) if (!present.has(name)) this.#good.delete(name);
    const list = [...this.#good.values()].sort((a, b) =>
      a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0,
    );
    problems.sort();
    const listChanged = canonicalJson(list) !== canonicalJson(this.#list);
    const problemsChanged = problems.join('\n') !== this.#problems.join('\n');
    if (!listChanged && !problemsChanged) return;
    if (listChanged) this.#list = Object.freeze(list);
    if (problemsChanged) {
      for (const problem of problems.filter((p) => !this.#problems.includes(p)))
        this.#logger.error({ kind: 'Workspace', problem }, 'invalid Workspace');
      this.#problems = Object.freeze(problems);
    }
    if (listChanged) this.#logger.info({ workspaces: list.map((w) => w.metadata.name) }, 'Workspaces in force changed');
    for (const listener of this.#listeners) listener();
  }
}

/** A Workspace object as translation reads it (status and server-set metadata dropped), and what is wrong with it. */
export function judgeWorkspace(obj: KubernetesObject): Judged {
  // List items may come without apiVersion/kind: the collection says what they are.
  const raw = {
    ...obj,
    apiVersion: `${WORKSPACE_API.group}/${WORKSPACE_API.version}`,
    kind: WORKSPACE_API.kind,
  } as unknown as Resource;
  const resource = normalizeResource({ ...raw, metadata: { ...raw.metadata, name: raw.metadata?.name ?? '' } });
  const issues = validateInputResource(resource);
  if (issues.length === 0) return { resource };
  return { resource, problem: issues.map((i) => `${i.path === '' ? '(object)' : i.path}: ${i.message}`).join('; ') };
}
