/**
 * Listeners of XdsServer backends (gRFC A36): a gRPC server asks for the Listener of the address
 * it binds, `grpc/server?xds.resource.listening_address=<ip>:<port>`. Its workload is the Pod with
 * that IP (or, for a wildcard or loopback bind, the Pod its node id names); its PeerAuthentication
 * decides the TLS (mesh trust on) and its AuthorizationPolicies the RBAC filters, as istiod's
 * proxyless generator does. The policies are read once per translation (`planInbound`), the Listener is
 * built when a server asks (`buildServerListener`).
 */
import { isRecord, type Resource } from '@meshrelay/api';
import type { FindingList } from './findings.ts';
import { HCM_FILTER, HCM_TYPE, RBAC_TYPE, ROUTER_FILTER, ROUTER_TYPE, parseServerListenerName } from './names.ts';
import { DENY_ALL_POLICIES, compileAuthorizationPolicies, type CompiledAuthorization } from './rbac.ts';
import { downstreamTlsSocket } from './tls.ts';
import type { MeshTls, XdsInput } from './types.ts';

type Json = Record<string, unknown>;
type Labels = Readonly<Record<string, string>>;

interface Workload {
  readonly namespace: string;
  readonly labels: Labels;
}

interface PeerAuthenticationRule {
  readonly namespace: string;
  readonly matchLabels: Labels | undefined;
  readonly mode: string | undefined;
  readonly portModes: Readonly<Record<string, string>>;
}

/** What server Listeners are built from; immutable, part of the XdsConfig. */
export interface InboundPlan {
  readonly meshTls: MeshTls | undefined;
  readonly rootNamespace: string;
  /** Pods by IP, and by `namespace/name` for wildcard and loopback binds identified by node id. */
  readonly byIp: ReadonlyMap<string, Workload>;
  readonly byName: ReadonlyMap<string, Workload>;
  readonly peerAuthentications: readonly PeerAuthenticationRule[];
  readonly authorizations: readonly CompiledAuthorization[];
}

function labelsOf(v: unknown): Labels | undefined {
  if (!isRecord(v)) return undefined;
  return Object.fromEntries(Object.entries(v).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

const MODES = new Set(['DISABLE', 'PERMISSIVE', 'STRICT']);

/** The mode a PeerAuthentication `mtls` sets (undefined: inherit); one it cannot read counts as STRICT. */
function mtlsMode(v: unknown, r: Resource, field: string, findings: FindingList): string | undefined {
  if (v === undefined || v === null) return undefined;
  const mode = isRecord(v) ? v['mode'] : undefined;
  if (mode === undefined || mode === 'UNSET') return undefined;
  if (typeof mode === 'string' && MODES.has(mode)) return mode;
  findings.add(r, `${field}.mode`, `${JSON.stringify(mode)} is not an mTLS mode; STRICT is applied`);
  return 'STRICT';
}

function indexWorkloads(discovered: readonly Resource[]): {
  byIp: Map<string, Workload>;
  byName: Map<string, Workload>;
} {
  const byIp = new Map<string, Workload>();
  const byName = new Map<string, Workload>();
  for (const r of discovered) {
    if (r.kind !== 'Pod' || r.apiVersion !== 'v1') continue;
    const workload = { namespace: r.metadata.namespace ?? 'default', labels: r.metadata.labels ?? {} };
    byName.set(`${workload.namespace}/${r.metadata.name}`, workload);
    const status = isRecord(r['status']) ? r['status'] : {};
    const ips = [
      status['podIP'],
      ...(Array.isArray(status['podIPs']) ? status['podIPs'].map((p) => (isRecord(p) ? p['ip'] : undefined)) : []),
    ];
    for (const ip of ips) if (typeof ip === 'string' && ip !== '') byIp.set(ip, workload);
  }
  return { byIp, byName };
}

function peerAuthentications(input: XdsInput, findings: FindingList): PeerAuthenticationRule[] {
  const out: PeerAuthenticationRule[] = [];
  const sorted = input.output
    .filter((r) => r.kind === 'PeerAuthentication' && r.apiVersion.startsWith('security.istio.io/'))
    .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
  for (const r of sorted) {
    const spec = isRecord(r.spec) ? r.spec : {};
    const portModes: Record<string, string> = {};
    if (isRecord(spec['portLevelMtls']))
      for (const [port, m] of Object.entries(spec['portLevelMtls'])) {
        const mode = mtlsMode(m, r, `spec.portLevelMtls.${port}`, findings);
        if (mode !== undefined) portModes[port] = mode;
      }
    const mode = mtlsMode(spec['mtls'], r, 'spec.mtls', findings);
    if (input.meshTls === undefined && [mode, ...Object.values(portModes)].includes('STRICT'))
      findings.add(
        r,
        'spec.mtls.mode',
        'STRICT needs mesh trust (a RootTrustPolicy); without it the XdsServer workloads it selects refuse every call',
      );
    const matchLabels = isRecord(spec['selector']) ? labelsOf(spec['selector']['matchLabels']) : undefined;
    out.push({ namespace: r.metadata.namespace ?? '', matchLabels, mode, portModes });
  }
  return out;
}

/** Reads the policies and workloads server Listeners are built from. */
export function planInbound(input: XdsInput, findings: FindingList): InboundPlan {
  const { byIp, byName } = indexWorkloads(input.discovered);
  return Object.freeze({
    meshTls: input.meshTls,
    rootNamespace: input.meshTls?.rootNamespace ?? 'istio-system',
    byIp,
    byName,
    peerAuthentications: peerAuthentications(input, findings),
    authorizations: compileAuthorizationPolicies(input.output, findings),
  });
}

function selects(matchLabels: Labels | undefined, labels: Labels): boolean {
  return matchLabels === undefined || Object.entries(matchLabels).every(([k, v]) => labels[k] === v);
}

/** Istio's precedence: workload selector over namespace over mesh (root namespace); UNSET inherits. */
function effectiveMode(plan: InboundPlan, w: Workload, port: number): string {
  const inNs = plan.peerAuthentications.filter((p) => p.namespace === w.namespace);
  const mesh = plan.peerAuthentications.find((p) => p.namespace === plan.rootNamespace && p.matchLabels === undefined);
  const ns = inNs.find((p) => p.matchLabels === undefined);
  const own = inNs.find((p) => p.matchLabels !== undefined && selects(p.matchLabels, w.labels));
  let mode = 'PERMISSIVE';
  for (const level of [mesh, ns, own]) if (level?.mode !== undefined) mode = level.mode;
  return own?.portModes[String(port)] ?? mode;
}

function rbacFilter(name: string, action: string, policies: Readonly<Record<string, Json>>): Json {
  return { name, typed_config: { '@type': RBAC_TYPE, rules: { action, policies } } };
}

/**
 * Istio's evaluation with two filters: a DENY filter (any DENY policy matching refuses), then an
 * ALLOW filter when any ALLOW policy selects the workload (the request must match one of their
 * rules; ALLOW policies without rules allow nothing).
 */
function rbacFilters(plan: InboundPlan, w: Workload, denyAll: boolean): Json[] {
  const applicable = plan.authorizations.filter(
    (a) => (a.namespace === w.namespace || a.namespace === plan.rootNamespace) && selects(a.matchLabels, w.labels),
  );
  const merge = (action: string): Record<string, Json> =>
    Object.assign({}, ...applicable.filter((a) => a.action === action).map((a) => a.policies)) as Record<string, Json>;
  const filters: Json[] = [];
  const deny = merge('DENY');
  if (Object.keys(deny).length > 0) filters.push(rbacFilter('envoy.filters.http.rbac.deny', 'DENY', deny));
  const allowing = applicable.some((a) => a.action === 'ALLOW');
  const allow = merge('ALLOW');
  if (denyAll || (allowing && Object.keys(allow).length === 0))
    filters.push(rbacFilter('envoy.filters.http.rbac.allow', 'ALLOW', DENY_ALL_POLICIES));
  else if (allowing) filters.push(rbacFilter('envoy.filters.http.rbac.allow', 'ALLOW', allow));
  return filters;
}

/** Addresses that are no other Pod's: wildcard and loopback binds. */
const OWN_ADDRESS = /^(0\.0\.0\.0|::|127\.\d+\.\d+\.\d+|::1)$/;

function workloadOf(plan: InboundPlan, address: string, nodeId: string | undefined): Workload | undefined {
  const found = plan.byIp.get(address);
  if (found !== undefined || nodeId === undefined || !OWN_ADDRESS.test(address)) return found;
  // A wildcard or loopback bind is the Pod's own; Istio's node id names it:
  // `sidecar~<ip>~<pod>.<namespace>~<namespace>.svc.<domain>`.
  const podDotNs = nodeId.split('~')[2] ?? '';
  const dot = podDotNs.lastIndexOf('.');
  return dot <= 0 ? undefined : plan.byName.get(`${podDotNs.slice(dot + 1)}/${podDotNs.slice(0, dot)}`);
}

/**
 * The Listener body for a server Listener name, or undefined when the name is not one or no
 * known workload serves there (the server then never starts serving: nothing is served
 * without its policies).
 */
export function buildServerListener(plan: InboundPlan, name: string, nodeId?: string): Json | undefined {
  const bound = parseServerListenerName(name);
  if (bound === undefined) return undefined;
  const workload = workloadOf(plan, bound.address, nodeId);
  if (workload === undefined) return undefined;
  const mode = effectiveMode(plan, workload, bound.port);
  const routeName = `inbound|${bound.port}`;
  const hcm = {
    '@type': HCM_TYPE,
    stat_prefix: `inbound_${bound.port}`,
    route_config: {
      name: routeName,
      virtual_hosts: [
        { name: routeName, domains: ['*'], routes: [{ match: { prefix: '/' }, non_forwarding_action: {} }] },
      ],
    },
    http_filters: [
      ...rbacFilters(plan, workload, mode === 'STRICT' && plan.meshTls === undefined),
      { name: ROUTER_FILTER, typed_config: { '@type': ROUTER_TYPE } },
    ],
  };
  const chain: Json = { name: routeName, filters: [{ name: HCM_FILTER, typed_config: hcm }] };
  if (plan.meshTls !== undefined && mode !== 'DISABLE')
    chain['transport_socket'] = downstreamTlsSocket(mode === 'STRICT');
  return {
    name,
    address: { socket_address: { address: bound.address, port_value: bound.port } },
    traffic_direction: 'INBOUND',
    default_filter_chain: chain,
  };
}
