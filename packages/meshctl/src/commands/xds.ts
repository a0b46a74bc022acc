import { InvalidArgumentError, type Command } from 'commander';
import { MeshrelayError, isRecord } from '@meshrelay/api';
import type { DataPlaneView } from '../api-types.ts';
import type { CliContext } from '../cli-context.ts';
import { formatAge, renderTable, shortHash } from '../format.ts';

/** The gRPC xDS bootstrap a proxyless workload reads (GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG). */
export interface XdsBootstrap {
  readonly xds_servers: readonly {
    readonly server_uri: string;
    readonly channel_creds: readonly { readonly type: string }[];
    readonly server_features: readonly string[];
  }[];
  readonly node: {
    readonly id: string;
    readonly locality: { readonly region?: string; readonly zone?: string; readonly sub_zone?: string };
  };
  /** With mesh trust: the name an XdsServer asks its agent for, per address it listens on. */
  readonly server_listener_resource_name_template?: string;
  /** With mesh trust: the workload certificate files the agent writes, watched by gRPC. */
  readonly certificate_providers?: Readonly<Record<string, CertificateProvider>>;
}

interface CertificateProvider {
  readonly plugin_name: 'file_watcher';
  readonly config: {
    readonly certificate_file: string;
    readonly private_key_file: string;
    readonly ca_certificate_file: string;
    readonly refresh_interval: string;
  };
}

/**
 * The names the agent's xDS uses for mesh TLS (packages/xds names.ts; an e2e test checks they agree,
 * since meshctl does not depend on the agent's packages): the certificate provider instance its
 * TLS contexts name, and the server Listener name template its ADS answers.
 */
export const MESH_CERT_PROVIDER = 'meshrelay';
export const SERVER_LISTENER_TEMPLATE = 'grpc/server?xds.resource.listening_address=%s';

/** Where a workload's certificates are, and how often gRPC re-reads them. */
export interface WorkloadCerts {
  /** The agent's `<workload-cert-dir>/<namespace>/<serviceAccount>` for this workload. */
  readonly dir: string;
  /** A protobuf JSON duration such as "10s". */
  readonly refresh: string;
}

function parseAgentAddress(value: string): string {
  if (!/^[^\s/]+:\d{1,5}$/.test(value) || Number(value.slice(value.lastIndexOf(':') + 1)) > 65_535) {
    throw new InvalidArgumentError(`"${value}" is not host:port (the agent's --xds-host/--xds-port)`);
  }
  return value;
}

function parseLocality(value: string): readonly string[] {
  const parts = value.split('/');
  if (parts.length > 3 || parts.some((p) => p === '' || /\s/.test(p)))
    throw new InvalidArgumentError(`"${value}" is not region[/zone[/subzone]]`);
  return parts;
}

/**
 * A ready bootstrap: the agent's ADS address over plaintext (the workload-facing channel
 * stays on loopback or the pod, as istio-agent's does), xDS v3, the node id and locality.
 * The locality decides which endpoints the workload prefers when failover is configured.
 */
export function buildXdsBootstrap(
  agentAddress: string,
  nodeId: string,
  locality?: readonly string[],
  certs?: WorkloadCerts,
): XdsBootstrap {
  const [region, zone, subZone] = locality ?? [];
  const file = (name: string): string => `${certs?.dir.replace(/\/+$/, '') ?? ''}/${name}`;
  return {
    xds_servers: [{ server_uri: agentAddress, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
    node: {
      id: nodeId,
      // Always present: grpc-js-xds refuses a bootstrap whose node has no locality (an XdsServer
      // fails at start with "locality field missing in node element"); empty means none known.
      locality:
        region !== undefined
          ? { region, ...(zone !== undefined ? { zone } : {}), ...(subZone !== undefined ? { sub_zone: subZone } : {}) }
          : {},
    },
    ...(certs !== undefined
      ? {
          server_listener_resource_name_template: SERVER_LISTENER_TEMPLATE,
          certificate_providers: {
            [MESH_CERT_PROVIDER]: {
              plugin_name: 'file_watcher',
              config: {
                certificate_file: file('certificate.pem'),
                private_key_file: file('private_key.pem'),
                ca_certificate_file: file('ca_certificate.pem'),
                refresh_interval: certs.refresh,
              },
            },
          },
        }
      : {}),
  };
}

function parseRefresh(value: string): string {
  if (!/^\d{1,5}s$/.test(value) || Number(value.slice(0, -1)) < 1)
    throw new InvalidArgumentError(`"${value}" is not a whole number of seconds such as 10s`);
  return value;
}

/** One connected proxy, from an agent's GET /xds/proxies or the server's GET /api/v1/xds/proxies. */
export interface ProxyRow {
  /** The cluster whose agent serves it (rows read through the management server). */
  readonly cluster?: string;
  readonly nodeId: string;
  readonly locality: string;
  /** How many names the proxy subscribed, by type (lds, rds, cds, eds). */
  readonly subscribed: Readonly<Record<string, number>>;
  readonly acked: Readonly<Record<string, string>>;
  readonly nacks: number;
  readonly lastNack: { readonly type: string; readonly reason: string; readonly at: string } | undefined;
}

/** Reads the agent's answer (an array, or `{proxies: [...]}`) leniently into rows; throws when it is neither. */
export function parseProxies(body: unknown): ProxyRow[] {
  const list = Array.isArray(body)
    ? body
    : isRecord(body) && Array.isArray(body['proxies'])
      ? body['proxies']
      : undefined;
  if (list === undefined)
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_ARGUMENT',
      'the agent answered /xds/proxies with something that is not a list of proxies',
    );
  return list.filter(isRecord).map((p) => {
    const loc = isRecord(p['locality']) ? p['locality'] : {};
    const locality = [loc['region'], loc['zone'], loc['subZone'] ?? loc['sub_zone']]
      .filter((x) => typeof x === 'string' && x !== '')
      .join('/');
    const acked = isRecord(p['acked']) ? p['acked'] : isRecord(p['ackedVersion']) ? p['ackedVersion'] : {};
    const nack = isRecord(p['lastNack']) ? p['lastNack'] : undefined;
    const subscribed = isRecord(p['subscribed']) ? p['subscribed'] : {};
    return {
      nodeId: typeof p['nodeId'] === 'string' ? p['nodeId'] : '',
      locality,
      subscribed: Object.fromEntries(
        Object.entries(subscribed).map(([type, names]) => [type, Array.isArray(names) ? names.length : 0]),
      ),
      acked: acked as Record<string, string>,
      nacks: typeof p['nacks'] === 'number' ? p['nacks'] : 0,
      lastNack: nack
        ? {
            type: String(nack['type'] ?? nack['typeUrl'] ?? ''),
            reason: String(nack['reason'] ?? ''),
            at: String(nack['at'] ?? ''),
          }
        : undefined,
    };
  });
}

/** Rows of the server's answer: every reported proxy of every cluster, with its cluster. */
export function rowsOfDataPlane(views: readonly DataPlaneView[]): ProxyRow[] {
  return views.flatMap((v) =>
    v.proxies.map((p) => ({
      cluster: v.cluster,
      nodeId: p.nodeId,
      locality: p.locality,
      subscribed: Object.fromEntries(Object.entries(p.types).map(([type, t]) => [type, t.subscribed])),
      acked: Object.fromEntries(Object.entries(p.types).map(([type, t]) => [type, t.ackedVersion])),
      nacks: p.nacks,
      lastNack: p.lastNack ? { type: p.lastNack.typeUrl, reason: p.lastNack.reason, at: p.lastNack.at } : undefined,
    })),
  );
}

/**
 * One line per cluster that has something to say beyond its proxies: not reporting, disconnected, clipped, findings.
 */
export function dataPlaneNotes(views: readonly DataPlaneView[], now: Date): string {
  const lines: string[] = [];
  for (const v of views) {
    if (!v.reported)
      lines.push(`${v.cluster}: no report from its agent (not connected, or not serving xDS: --xds-port/--xds-socket)`);
    else if (!v.serving) lines.push(`${v.cluster}: its agent does not serve xDS (--xds-port/--xds-socket unset)`);
    else if (!v.agentConnected)
      lines.push(`${v.cluster}: agent disconnected; proxies as reported ${formatAge(v.receivedAt ?? '', now)} ago`);
    if (v.proxiesNotListed > 0) lines.push(`${v.cluster}: ${v.proxiesNotListed} more proxies connected, not listed`);
    for (const f of v.findings) lines.push(`${v.cluster}: cannot take ${f.source} ${f.field}: ${f.message}`);
  }
  return lines.length === 0 ? '' : `\n${lines.join('\n')}\n`;
}

const TYPES = ['lds', 'rds', 'cds', 'eds'];

/** A table: node, locality, subscribed counts and ACKed version per type, NACKs and the last one's reason. */
export function renderProxies(
  rows: readonly ProxyRow[],
  now: Date,
  empty = 'No proxies are connected to this agent.',
): string {
  if (rows.length === 0) return `${empty}\n`;
  const withCluster = rows.some((r) => r.cluster !== undefined);
  return renderTable(
    [
      ...(withCluster ? ['CLUSTER'] : []),
      'NODE',
      'LOCALITY',
      ...TYPES.map((t) => t.toUpperCase()),
      'NACKS',
      'LAST NACK',
    ],
    rows.map((r) => [
      ...(withCluster ? [r.cluster ?? '-'] : []),
      r.nodeId,
      r.locality === '' ? '-' : r.locality,
      ...TYPES.map((t) =>
        r.subscribed[t] === undefined ? '-' : `${r.subscribed[t] ?? 0}@${shortHash(r.acked[t] || '-', 8)}`,
      ),
      String(r.nacks),
      r.lastNack
        ? `${r.lastNack.type.split('.').pop() ?? ''} ${formatAge(r.lastNack.at, now)} ago: ${r.lastNack.reason}`
        : '-',
    ]),
  );
}

async function fetchProxies(agentUrl: string, timeoutMs: number): Promise<unknown> {
  const url = `${agentUrl.replace(/\/+$/, '')}/xds/proxies`;
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_UNAVAILABLE',
      `cannot reach the agent at ${url}: ${(err as Error).message}`,
      { cause: err },
    );
  }
  if (!res.ok)
    throw new MeshrelayError('MESHRELAY_ERR_UNAVAILABLE', `the agent answered ${url} with HTTP ${res.status}`);
  return res.json();
}

/** Adds `xds bootstrap` and `proxy list`. */
export function addXdsCommands(program: Command, ctx: CliContext): void {
  const xds = program.command('xds').description("proxyless gRPC workloads and the agent's xDS server");
  xds
    .command('bootstrap')
    .description(
      'print a gRPC xDS bootstrap (JSON) for a workload: set GRPC_XDS_BOOTSTRAP_CONFIG to it and dial xds:///<host>:<port>',
    )
    .requiredOption(
      '--agent-address <host:port>',
      "the agent's xDS address (its --xds-host:--xds-port)",
      parseAgentAddress,
    )
    .requiredOption(
      '--node-id <id>',
      "the workload's node id (any string; istio-style sidecar~<ip>~<pod>.<ns>~<ns>.svc.cluster.local)",
    )
    .option(
      '--locality <region/zone>',
      'where the workload runs: region[/zone[/subzone]] (decides locality failover)',
      parseLocality,
    )
    .option(
      '--workload-certs <dir>',
      "with mesh trust: the workload's certificate directory, the agent's <workload-cert-dir>/<namespace>/<serviceAccount>",
    )
    .option('--cert-refresh <seconds>', 'how often gRPC re-reads the certificate files', parseRefresh, '10s')
    .action(
      (flags: {
        agentAddress: string;
        nodeId: string;
        locality?: readonly string[];
        workloadCerts?: string;
        certRefresh: string;
      }) => {
        if (flags.workloadCerts === '') throw new InvalidArgumentError('--workload-certs: must name a directory');
        const certs =
          flags.workloadCerts !== undefined ? { dir: flags.workloadCerts, refresh: flags.certRefresh } : undefined;
        ctx.printJson(buildXdsBootstrap(flags.agentAddress, flags.nodeId, flags.locality, certs));
      },
    );

  const proxy = program.command('proxy').description('proxies connected to the agents over xDS');
  proxy
    .command('list')
    .description(
      'connected proxies: node id, locality, subscribed names and ACKed version per type, NACKs with the last reason, and what they cannot take',
    )
    .option('--cluster <name>', 'only this cluster (read through the management server)')
    .option('--agent <url>', 'ask one agent directly on its health port instead, e.g. http://127.0.0.1:9977')
    .action(async (flags: { cluster?: string; agent?: string }, cmd: Command) => {
      const g = ctx.globals(cmd);
      if (flags.agent !== undefined && flags.cluster !== undefined)
        throw new MeshrelayError(
          'MESHRELAY_ERR_INVALID_ARGUMENT',
          '--agent and --cluster exclude each other: --agent asks one agent, --cluster asks the management server',
        );
      if (flags.agent !== undefined) {
        const rows = parseProxies(await fetchProxies(flags.agent, g.timeoutMs));
        if (g.output === 'json') return ctx.printJson(rows);
        return ctx.print(renderProxies(rows, ctx.now()));
      }
      const views = await ctx.client(cmd).dataPlane(flags.cluster);
      if (g.output === 'json') return ctx.printJson(views);
      const where = flags.cluster === undefined ? 'any cluster' : `cluster ${flags.cluster}`;
      ctx.print(
        renderProxies(rowsOfDataPlane(views), ctx.now(), `No proxies are connected in ${where}.`) +
          dataPlaneNotes(views, ctx.now()),
      );
    });
}
