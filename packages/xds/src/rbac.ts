/**
 * Istio AuthorizationPolicy → Envoy RBAC (gRPC's server-side RBAC filter, gRFC A41), as istiod's
 * builder does it: one RBAC policy per rule; a rule matches when one of its `from` sources, one
 * of its `to` operations and every `when` condition match. What gRPC cannot check (JWT request
 * principals, unknown condition keys) is a finding and never widens access: in an ALLOW rule
 * it matches nothing, in a DENY rule it matches everything.
 */
import { isRecord, type Resource } from '@meshrelay/api';
import type { FindingList } from './findings.ts';

type Json = Record<string, unknown>;
export type RbacAction = 'ALLOW' | 'DENY';

/** One AuthorizationPolicy, compiled once per translation; applied per workload by `selects`. */
export interface CompiledAuthorization {
  readonly namespace: string;
  readonly matchLabels: Readonly<Record<string, string>> | undefined;
  readonly action: RbacAction;
  /** Envoy RBAC policies by name (one per rule, named after the resource and rule index). */
  readonly policies: Readonly<Record<string, Json>>;
}

/** An ALLOW policy no request matches: what a workload gets when it must refuse everything. */
export const DENY_ALL_POLICIES: Readonly<Record<string, Json>> = Object.freeze({
  'meshrelay-deny-all': { permissions: [{ any: true }], principals: [{ not_id: { any: true } }] },
});

/** Where a rule part sits and how to treat what cannot be checked there. */
interface Ctx {
  readonly resource: Resource;
  readonly action: RbacAction;
  readonly findings: FindingList;
}

const ANY_ID: Json = { any: true };
const ANY_RULE: Json = { any: true };

function unknownId(ctx: Ctx, field: string, message: string): Json {
  ctx.findings.add(ctx.resource, field, `${message}; ${closedText(ctx)}`);
  return ctx.action === 'ALLOW' ? { not_id: ANY_ID } : ANY_ID;
}

function closedText(ctx: Ctx): string {
  return ctx.action === 'ALLOW'
    ? 'gRPC servers cannot check it, so this rule allows nothing'
    : 'gRPC servers cannot check it, so this rule denies regardless of it';
}

const combine =
  (many: string, key: string, empty: Json) =>
  (items: Json[]): Json =>
    items.length === 0 ? empty : items.length === 1 ? (items[0] as Json) : { [many]: { [key]: items } };
const andIds = combine('and_ids', 'ids', ANY_ID);
const orIds = combine('or_ids', 'ids', { not_id: ANY_ID });
const andRules = combine('and_rules', 'rules', ANY_RULE);
const orRules = combine('or_rules', 'rules', { not_rule: ANY_RULE });

function strings(v: unknown): string[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out = v.filter((s): s is string => typeof s === 'string');
  return out.length > 0 ? out : undefined;
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** An Istio value with its one allowed wildcard (`*`, `prefix*`, `*suffix`) as a StringMatcher; undefined = any. */
function stringMatcher(value: string, prefix = ''): Json | undefined {
  if (value === '*') return undefined;
  if (value.startsWith('*')) return { suffix: value.slice(1) };
  if (value.endsWith('*')) return { prefix: prefix + value.slice(0, -1) };
  return { exact: prefix + value };
}

function principalId(p: string): Json {
  return { authenticated: { principal_name: stringMatcher(p, 'spiffe://') ?? { safe_regex: { regex: '.+' } } } };
}

function namespaceId(ns: string): Json {
  const part =
    ns === '*'
      ? '[^/]+'
      : ns.startsWith('*')
        ? `[^/]*${escapeRegex(ns.slice(1))}`
        : ns.endsWith('*')
          ? `${escapeRegex(ns.slice(0, -1))}[^/]*`
          : escapeRegex(ns);
  return { authenticated: { principal_name: { safe_regex: { regex: `.*/ns/${part}/.*` } } } };
}

function cidr(block: string): Json {
  const [address, len] = block.split('/');
  const prefixLen = len === undefined ? (address?.includes(':') ? 128 : 32) : Number(len);
  return { address_prefix: address ?? '', prefix_len: { value: prefixLen } };
}

function headerRule(name: string, value: string): Json {
  const match = stringMatcher(value);
  return { header: match === undefined ? { name, present_match: true } : { name, string_match: match } };
}

/** Principal matchers of a source field, by field name; positive and `not` forms. */
const SOURCE_FIELDS: Readonly<Record<string, (v: string) => Json>> = {
  principals: principalId,
  namespaces: namespaceId,
  ipBlocks: (b) => ({ direct_remote_ip: cidr(b) }),
  remoteIpBlocks: (b) => ({ remote_ip: cidr(b) }),
};

function negatedField(key: string): string | undefined {
  if (!key.startsWith('not')) return undefined;
  const base = key.charAt(3).toLowerCase() + key.slice(4);
  return base;
}

function sourceId(source: Json, where: string, ctx: Ctx): Json {
  const ids: Json[] = [];
  for (const [key, value] of Object.entries(source)) {
    const list = strings(value);
    if (list === undefined) continue;
    const base = negatedField(key) ?? key;
    const build = SOURCE_FIELDS[base];
    if (build === undefined) {
      ids.push(unknownId(ctx, `${where}.${key}`, `${key} (request authentication) has no gRPC RBAC mapping`));
      continue;
    }
    const any = orIds(list.map(build));
    ids.push(base === key ? any : { not_id: any });
  }
  return andIds(ids);
}

/** Permission matchers of an operation field, by field name. */
const OPERATION_FIELDS: Readonly<Record<string, (v: string) => Json>> = {
  paths: (p) => {
    const m = stringMatcher(p);
    return m === undefined ? ANY_RULE : { url_path: { path: m } };
  },
  methods: (m) => headerRule(':method', m),
  hosts: (h) => headerRule(':authority', h),
  ports: (p) => ({ destination_port: Number(p) }),
};

function operationRule(operation: Json, where: string, ctx: Ctx): Json {
  const rules: Json[] = [];
  for (const [key, value] of Object.entries(operation)) {
    const list = Array.isArray(value) ? value.map(String) : undefined;
    if (list === undefined || list.length === 0) continue;
    const base = negatedField(key) ?? key;
    const build = OPERATION_FIELDS[base];
    if (build === undefined) {
      ctx.findings.add(ctx.resource, `${where}.${key}`, `${key} has no gRPC RBAC mapping; ${closedText(ctx)}`);
      rules.push(ctx.action === 'ALLOW' ? { not_rule: ANY_RULE } : ANY_RULE);
      continue;
    }
    const any = orRules(list.map(build));
    rules.push(base === key ? any : { not_rule: any });
  }
  return andRules(rules);
}

/** A `when` condition: a principal (source keys) or a permission (request and destination keys). */
function condition(cond: Json, where: string, ctx: Ctx): { id?: Json; rule?: Json } {
  const key = typeof cond['key'] === 'string' ? cond['key'] : '';
  const header = /^request\.headers\[(.+)\]$/.exec(key)?.[1];
  const byKey: Record<string, { id?: (v: string) => Json; rule?: (v: string) => Json }> = {
    'source.ip': { id: (v) => ({ direct_remote_ip: cidr(v) }) },
    'remote.ip': { id: (v) => ({ remote_ip: cidr(v) }) },
    'source.namespace': { id: namespaceId },
    'source.principal': { id: principalId },
    'destination.ip': { rule: (v) => ({ destination_ip: cidr(v) }) },
    'destination.port': { rule: (v) => ({ destination_port: Number(v) }) },
  };
  const build = header !== undefined ? { rule: (v: string) => headerRule(header.toLowerCase(), v) } : byKey[key];
  if (build === undefined) return { id: unknownId(ctx, `${where}.key`, `condition ${key} has no gRPC RBAC mapping`) };
  const parts: Json[] = [];
  const values = strings(cond['values']);
  const notValues = strings(cond['notValues']);
  if (build.id) {
    if (values) parts.push(orIds(values.map(build.id)));
    if (notValues) parts.push({ not_id: orIds(notValues.map(build.id)) });
    return { id: andIds(parts) };
  }
  const rule = build.rule as (v: string) => Json;
  if (values) parts.push(orRules(values.map(rule)));
  if (notValues) parts.push({ not_rule: orRules(notValues.map(rule)) });
  return { rule: andRules(parts) };
}

function records(v: unknown): Json[] | undefined {
  return Array.isArray(v) && v.length > 0 ? v.filter(isRecord) : undefined;
}

const isList = (v: unknown, item: (x: unknown) => boolean): boolean => Array.isArray(v) && v.every(item);
const isText = (x: unknown): boolean => typeof x === 'string';
const isTextOrNumber = (x: unknown): boolean => typeof x === 'string' || typeof x === 'number';

function fieldsProblem(v: unknown, where: string, item: (x: unknown) => boolean): string | undefined {
  if (!isRecord(v)) return `${where} is not an object`;
  const bad = Object.entries(v).find(([, value]) => !isList(value, item));
  return bad === undefined ? undefined : `${where}.${bad[0]} is not a list of values`;
}

/** What is malformed in a rule (its fields read as something else would widen or narrow it), if anything. */
function shapeProblem(rule: unknown, where: string): string | undefined {
  if (!isRecord(rule)) return `${where} is not an object`;
  for (const key of ['from', 'to', 'when'])
    if (rule[key] !== undefined && !isList(rule[key], isRecord)) return `${where}.${key} is not a list of objects`;
  const from = (rule['from'] ?? []) as Json[];
  const to = (rule['to'] ?? []) as Json[];
  const when = (rule['when'] ?? []) as Json[];
  return (
    from.map((f, i) => fieldsProblem(f['source'], `${where}.from[${i}].source`, isText)).find(Boolean) ??
    to.map((o, i) => fieldsProblem(o['operation'], `${where}.to[${i}].operation`, isTextOrNumber)).find(Boolean) ??
    when
      .map((c, i) =>
        typeof c['key'] !== 'string' ||
        (c['values'] !== undefined && !isList(c['values'], isText)) ||
        (c['notValues'] !== undefined && !isList(c['notValues'], isText))
          ? `${where}.when[${i}] is not a condition (key, values, notValues)`
          : undefined,
      )
      .find(Boolean)
  );
}

/** The policy of a malformed rule: in a DENY policy it denies every request; in an ALLOW policy there is none. */
function malformedRule(problem: string, ctx: Ctx): Json | undefined {
  ctx.findings.add(ctx.resource, problem.split(' ')[0] ?? 'spec.rules', `${problem}; ${closedText(ctx)}`);
  return ctx.action === 'DENY' ? { permissions: [ANY_RULE], principals: [ANY_ID] } : undefined;
}

/** One Istio rule as one Envoy RBAC policy. */
function rulePolicy(rule: Json, where: string, ctx: Ctx): Json {
  const ids: Json[] = [];
  const rules: Json[] = [];
  const from = records(rule['from']);
  if (from)
    ids.push(
      orIds(from.map((f, i) => sourceId(isRecord(f['source']) ? f['source'] : {}, `${where}.from[${i}].source`, ctx))),
    );
  const to = records(rule['to']);
  if (to)
    rules.push(
      orRules(
        to.map((t, i) =>
          operationRule(isRecord(t['operation']) ? t['operation'] : {}, `${where}.to[${i}].operation`, ctx),
        ),
      ),
    );
  (records(rule['when']) ?? []).forEach((c, i) => {
    const part = condition(c, `${where}.when[${i}]`, ctx);
    if (part.id) ids.push(part.id);
    if (part.rule) rules.push(part.rule);
  });
  return { permissions: [andRules(rules)], principals: [andIds(ids)] };
}

function actionOf(spec: Json, r: Resource, findings: FindingList): RbacAction | undefined {
  const action = typeof spec['action'] === 'string' ? spec['action'] : 'ALLOW';
  if (action === 'ALLOW' || action === 'DENY') return action;
  if (action === 'AUDIT') {
    findings.add(r, 'spec.action', 'AUDIT has no gRPC RBAC mapping; the policy is not applied (it decides nothing)');
    return undefined;
  }
  const what = action === 'CUSTOM' ? 'CUSTOM (external authorization)' : `action ${action}`;
  findings.add(r, 'spec.action', `${what} has no gRPC RBAC mapping; its rules deny`);
  return 'DENY';
}

/**
 * Every enforced AuthorizationPolicy of the output (dry-run ones are left out, as Istio only
 * logs them). A policy aimed by targetRef(s) is applied to its whole namespace: for ALLOW and
 * DENY alike, a wider target only refuses more.
 */
export function compileAuthorizationPolicies(
  output: readonly Resource[],
  findings: FindingList,
): CompiledAuthorization[] {
  const out: CompiledAuthorization[] = [];
  for (const r of output) {
    if (r.kind !== 'AuthorizationPolicy' || !r.apiVersion.startsWith('security.istio.io/')) continue;
    if (r.metadata.annotations?.['istio.io/dry-run'] === 'true') continue;
    const spec = isRecord(r.spec) ? r.spec : {};
    const action = actionOf(spec, r, findings);
    if (action === undefined) continue;
    if (spec['targetRef'] !== undefined || spec['targetRefs'] !== undefined)
      findings.add(r, 'spec.targetRefs', 'targetRefs is not applied to proxyless workloads; the whole namespace is');
    const ctx: Ctx = { resource: r, action, findings };
    const policies: Record<string, Json> = {};
    const rules: unknown[] =
      spec['rules'] === undefined ? [] : Array.isArray(spec['rules']) ? spec['rules'] : [spec['rules']];
    rules.forEach((rule, i) => {
      const where = Array.isArray(spec['rules']) ? `spec.rules[${i}]` : 'spec.rules';
      const problem = Array.isArray(spec['rules']) ? shapeProblem(rule, where) : `${where} is not a list`;
      const policy = problem === undefined ? rulePolicy(rule as Json, where, ctx) : malformedRule(problem, ctx);
      if (policy !== undefined)
        policies[`ns[${r.metadata.namespace ?? ''}]-policy[${r.metadata.name}]-rule[${i}]`] = policy;
    });
    const selector =
      isRecord(spec['selector']) && isRecord(spec['selector']['matchLabels'])
        ? spec['selector']['matchLabels']
        : undefined;
    const matchLabels = selector
      ? Object.fromEntries(Object.entries(selector).filter((e): e is [string, string] => typeof e[1] === 'string'))
      : undefined;
    out.push({ namespace: r.metadata.namespace ?? '', matchLabels, action, policies });
  }
  return out;
}
