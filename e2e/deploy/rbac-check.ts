// Kubernetes RBAC as the API server applies it to resource requests: a request becomes
// (verb, group, resource[/subresource], namespace, name) and is allowed when a rule of a ClusterRole,
// or of a Role in the request's namespace, names that group, resource and verb, and, when the rule
// lists resourceNames, the request names one of them (so a create, which names none, never matches).
import type { FakeKubeRequest } from '@meshrelay/testkit';
import type { KubeObject } from './helm-runner.ts';
import { asList } from './kube-checks.ts';

export interface ResourceRequest {
  readonly verb: string;
  readonly group: string;
  /** `plural` or `plural/subresource`. */
  readonly resource: string;
  /** undefined for a cluster-scoped or all-namespaces request. */
  readonly namespace: string | undefined;
  /** The object named in the path; undefined for create, list, watch and deletecollection. */
  readonly name?: string;
}

const RESOURCE_PATH =
  /^\/(?:api\/v1|apis\/([^/]+)\/[^/]+)(?:\/namespaces\/([^/]+))?\/([^/]+)(?:\/([^/]+)(?:\/([^/]+))?)?$/;

/** The RBAC attributes of one request; throws for a path that is not a resource request. */
export function resourceRequestOf(request: Pick<FakeKubeRequest, 'method' | 'path' | 'query'>): ResourceRequest {
  const match = RESOURCE_PATH.exec(request.path);
  if (!match) throw new Error(`${request.method} ${request.path} is not a resource request`);
  const [, group = '', namespace, plural = '', name, subresource] = match;
  const watch = request.query['watch'] === 'true' || request.query['watch'] === '1';
  const verbs: Record<string, string> = {
    GET: name !== undefined ? 'get' : watch ? 'watch' : 'list',
    POST: 'create',
    PUT: 'update',
    PATCH: 'patch',
    DELETE: name !== undefined ? 'delete' : 'deletecollection',
  };
  const verb = verbs[request.method];
  if (verb === undefined) throw new Error(`${request.method} ${request.path}: no RBAC verb for this method`);
  return {
    verb,
    group,
    resource: subresource !== undefined ? `${plural}/${subresource}` : plural,
    namespace,
    ...(name !== undefined ? { name } : {}),
  };
}

function ruleAllows(rule: Record<string, unknown>, r: ResourceRequest): boolean {
  const has = (key: string, value: string) => {
    const list = rule[key] as string[] | undefined;
    return list !== undefined && (list.includes(value) || list.includes('*'));
  };
  const names = rule['resourceNames'] as string[] | undefined;
  const named = names === undefined || names.length === 0 || (r.name !== undefined && names.includes(r.name));
  return has('apiGroups', r.group) && has('resources', r.resource) && has('verbs', r.verb) && named;
}

/** Whether the Roles and ClusterRoles (all assumed bound to the caller) allow the request. */
export function allowedBy(roles: readonly KubeObject[], r: ResourceRequest): boolean {
  return roles.some((role) => {
    if (role.kind === 'Role' && role.metadata.namespace !== r.namespace) return false;
    if (role.kind !== 'Role' && role.kind !== 'ClusterRole') return false;
    return asList(role['rules']).some((rule) => ruleAllows(rule, r));
  });
}

/** "verb group/resource in namespace" for messages. */
export function describeRequest(r: ResourceRequest): string {
  return `${r.verb} ${r.group === '' ? 'core' : r.group}/${r.resource}${r.namespace !== undefined ? ` in ${r.namespace}` : ' (cluster-wide)'}`;
}
