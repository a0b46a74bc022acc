// URL and verb dispatch of the fake kube-apiserver (see fake-kube-api-server.ts): discovery
// documents, then `/api/v1/...` and `/apis/{group}/{version}/...` resource paths in their
// namespaced, cluster-scoped and all-namespaces forms, with an optional `/status` subresource.

import type { ServerResponse } from 'node:http';
import { apiVersionOf, type FakeKubeResourceType, type FakeKubeResourceTypeTable } from './fake-kube-resource-types.ts';
import { parseFieldSelector, parseLabelSelector, type FakeKubeObject } from './fake-kube-selectors.ts';
import { badRequest, FakeKubeStatusError } from './fake-kube-status.ts';
import type { FakeKubePatchType, FakeKubeStore, FakeKubeWriteOptions } from './fake-kube-store.ts';
import { type FakeKubeWatchHub } from './fake-kube-watch.ts';

export interface FakeKubeAnswer {
  readonly status: number;
  readonly body: unknown;
}

interface RequestLike {
  readonly method: string;
  readonly path: string;
  readonly contentType: string | undefined;
  readonly body: unknown;
}

interface ResourcePath {
  readonly type: FakeKubeResourceType;
  /** undefined: cluster-scoped type, or all namespaces of a namespaced one. */
  readonly namespace: string | undefined;
  readonly name: string | undefined;
  readonly subresource: 'status' | undefined;
}

const PATCH_TYPES: Record<string, FakeKubePatchType> = {
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'strategic',
  'application/json-patch+json': 'json',
  'application/apply-patch+yaml': 'apply',
};

function notFoundPath(): FakeKubeStatusError {
  return new FakeKubeStatusError(404, 'NotFound', 'the server could not find the requested resource');
}

function methodNotAllowed(method: string): FakeKubeStatusError {
  return new FakeKubeStatusError(
    405,
    'MethodNotAllowed',
    `the server does not allow this method on the requested resource (${method})`,
  );
}

interface ContinueToken {
  readonly after: string;
}

function encodeContinue(token: ContinueToken): string {
  return Buffer.from(JSON.stringify(token)).toString('base64url');
}

function decodeContinue(raw: string): ContinueToken {
  try {
    return JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as ContinueToken;
  } catch {
    throw badRequest(`invalid continue token "${raw}"`);
  }
}

function sortKey(obj: FakeKubeObject): string {
  return `${obj.metadata.namespace ?? ''}/${obj.metadata.name ?? ''}`;
}

/** Routes one parsed request to discovery, the store or a watch stream. */
export class FakeKubeRouter {
  readonly #types: FakeKubeResourceTypeTable;
  readonly #store: FakeKubeStore;
  readonly #watches: FakeKubeWatchHub;

  constructor(types: FakeKubeResourceTypeTable, store: FakeKubeStore, watches: FakeKubeWatchHub) {
    this.#types = types;
    this.#store = store;
    this.#watches = watches;
  }

  /** The answer to send, or 'streaming' when a watch took over `res`. Throws FakeKubeStatusError. */
  route(request: RequestLike, params: URLSearchParams, res: ServerResponse): FakeKubeAnswer | 'streaming' {
    const discovery = this.#discovery(request.method, request.path);
    if (discovery !== undefined) return { status: 200, body: discovery };
    const path = this.#parsePath(request.path);
    switch (request.method) {
      case 'GET':
        if (path.name !== undefined) return { status: 200, body: this.#get(path) };
        if (params.get('watch') === 'true' || params.get('watch') === '1') {
          this.#watch(path, params, res);
          return 'streaming';
        }
        return { status: 200, body: this.#list(path, params) };
      case 'POST':
        if (path.name !== undefined || (path.namespace === undefined && path.type.namespaced))
          throw methodNotAllowed('POST');
        rejectDryRun(params);
        return {
          status: 201,
          body: this.#store.create(path.type, path.namespace ?? '', asObject(request.body), writeOptions(params)),
        };
      case 'PUT':
        rejectDryRun(params);
        return {
          status: 200,
          body: this.#store.replace(
            path.type,
            path.namespace ?? '',
            requireName(path),
            asObject(request.body),
            writeOptions(params, path),
          ),
        };
      case 'PATCH': {
        rejectDryRun(params);
        const patchType = PATCH_TYPES[request.contentType ?? ''];
        if (!patchType) {
          throw new FakeKubeStatusError(
            415,
            'UnsupportedMediaType',
            `the body of the request was in an unknown format - accepted media types include: ${Object.keys(PATCH_TYPES).join(', ')}`,
          );
        }
        const existed =
          path.name !== undefined && this.#store.get(path.type, path.namespace ?? '', path.name) !== undefined;
        const body = this.#store.patch(
          path.type,
          path.namespace ?? '',
          requireName(path),
          patchType,
          request.body,
          writeOptions(params, path),
        );
        return { status: patchType === 'apply' && !existed ? 201 : 200, body };
      }
      case 'DELETE': {
        if (path.subresource) throw methodNotAllowed('DELETE');
        rejectDryRun(params);
        const options = (request.body ?? {}) as { preconditions?: { resourceVersion?: string; uid?: string } };
        return {
          status: 200,
          body: this.#store.delete(path.type, path.namespace ?? '', requireName(path), options.preconditions),
        };
      }
      default:
        throw methodNotAllowed(request.method);
    }
  }

  #get(path: ResourcePath): FakeKubeObject {
    const obj = this.#store.get(path.type, path.namespace ?? '', path.name ?? '');
    if (!obj)
      throw new FakeKubeStatusError(
        404,
        'NotFound',
        `${path.type.group ? `${path.type.plural}.${path.type.group}` : path.type.plural} "${path.name}" not found`,
        { name: path.name ?? '', group: path.type.group, kind: path.type.plural },
      );
    return obj;
  }

  #list(path: ResourcePath, params: URLSearchParams): unknown {
    const labels = parseLabelSelector(params.get('labelSelector'));
    const fields = parseFieldSelector(params.get('fieldSelector'));
    let items = this.#store.list(path.type, path.namespace).filter((o) => labels(o) && fields(o));
    const continueRaw = params.get('continue');
    if (continueRaw) {
      const after = decodeContinue(continueRaw).after;
      items = items.filter((o) => sortKey(o) > after);
    }
    const limit = Number(params.get('limit') ?? '0');
    const metadata: Record<string, unknown> = { resourceVersion: String(this.#store.resourceVersion) };
    if (limit > 0 && items.length > limit) {
      metadata.remainingItemCount = items.length - limit;
      items = items.slice(0, limit);
      metadata.continue = encodeContinue({ after: sortKey(items[items.length - 1]!) });
    }
    // kube-apiserver encodes the items of a built-in list without apiVersion/kind.
    if (path.type.builtIn) items = items.map(({ apiVersion: _a, kind: _k, ...rest }) => rest as FakeKubeObject);
    return { apiVersion: apiVersionOf(path.type), kind: `${path.type.kind}List`, metadata, items };
  }

  #watch(path: ResourcePath, params: URLSearchParams, res: ServerResponse): void {
    const labels = parseLabelSelector(params.get('labelSelector'));
    const fields = parseFieldSelector(params.get('fieldSelector'));
    const timeout = params.get('timeoutSeconds');
    this.#watches.serve(
      {
        type: path.type,
        namespace: path.namespace,
        filter: (o) => labels(o) && fields(o),
        resourceVersion: params.get('resourceVersion') ?? '',
        timeoutSeconds: timeout === null ? undefined : Number(timeout),
        bookmarks: params.get('allowWatchBookmarks') === 'true',
      },
      res,
    );
  }

  #parsePath(pathname: string): ResourcePath {
    const segments = pathname.split('/').filter((s) => s !== '');
    let group: string;
    let version: string;
    let rest: string[];
    if (segments[0] === 'api' && segments.length >= 3) {
      [group, version, rest] = ['', segments[1]!, segments.slice(2)];
    } else if (segments[0] === 'apis' && segments.length >= 4) {
      [group, version, rest] = [segments[1]!, segments[2]!, segments.slice(3)];
    } else {
      throw notFoundPath();
    }
    const namespacedType =
      rest[0] === 'namespaces' && rest.length >= 3 ? this.#types.byPlural(group, version, rest[2]!) : undefined;
    const [type, namespace, tail] = namespacedType?.namespaced
      ? [namespacedType, rest[1]!, rest.slice(3)]
      : [this.#types.byPlural(group, version, rest[0]!), undefined, rest.slice(1)];
    if (!type || tail.length > 2) throw notFoundPath();
    const [name, subresource] = tail;
    if (subresource !== undefined && !(subresource === 'status' && type.statusSubresource)) throw notFoundPath();
    if (type.namespaced && namespace === undefined && name !== undefined) throw notFoundPath();
    return { type, namespace, name, subresource: subresource === 'status' ? 'status' : undefined };
  }

  #discovery(method: string, pathname: string): unknown {
    if (method !== 'GET') return undefined;
    const path = pathname.replace(/\/+$/, '');
    if (path === '/version') return { major: '1', minor: '33', gitVersion: 'v1.33.0-fake', platform: 'linux/amd64' };
    if (path === '/healthz' || path === '/readyz' || path === '/livez') return 'ok';
    if (path === '/api') return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] };
    if (path === '/apis') return this.#groupList();
    const core = /^\/api\/(v1)$/.exec(path);
    const named = /^\/apis\/([^/]+)\/([^/]+)$/.exec(path);
    if (core) return this.#resourceList('', core[1]!);
    if (named) return this.#resourceList(named[1]!, named[2]!);
    return undefined;
  }

  #groupList(): unknown {
    const groups = new Map<string, Set<string>>();
    for (const t of this.#types.all()) {
      if (t.group !== '') groups.set(t.group, (groups.get(t.group) ?? new Set()).add(t.version));
    }
    return {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: [...groups].map(([name, versions]) => {
        const list = [...versions].map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
        return { name, versions: list, preferredVersion: list[0] };
      }),
    };
  }

  #resourceList(group: string, version: string): unknown {
    const types = this.#types.inGroupVersion(group, version);
    if (types.length === 0) throw notFoundPath();
    const verbs = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];
    return {
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: group === '' ? version : `${group}/${version}`,
      resources: types.flatMap((t) => [
        { name: t.plural, singularName: t.kind.toLowerCase(), namespaced: t.namespaced, kind: t.kind, verbs },
        ...(t.statusSubresource
          ? [
              {
                name: `${t.plural}/status`,
                singularName: '',
                namespaced: t.namespaced,
                kind: t.kind,
                verbs: ['get', 'patch', 'update'],
              },
            ]
          : []),
      ]),
    };
  }
}

function requireName(path: ResourcePath): string {
  if (path.name === undefined) throw methodNotAllowed('collection');
  return path.name;
}

function asObject(body: unknown): FakeKubeObject {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw badRequest('the request body must be a JSON object');
  const obj = body as FakeKubeObject;
  return { ...obj, metadata: { ...(obj.metadata ?? {}) } };
}

function writeOptions(params: URLSearchParams, path?: ResourcePath): FakeKubeWriteOptions {
  const fieldManager = params.get('fieldManager') ?? undefined;
  return {
    ...(path?.subresource ? { subresource: path.subresource } : {}),
    ...(fieldManager ? { fieldManager } : {}),
    force: params.get('force') === 'true',
  };
}

function rejectDryRun(params: URLSearchParams): void {
  if (params.has('dryRun')) throw badRequest('dryRun is not supported by the fake kube-apiserver');
}
