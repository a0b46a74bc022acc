import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { DNS_NAME_MAX_LENGTH, DNS_NAME_PATTERN, MeshrelayError, toMeshrelayError } from '@meshrelay/api';
import type { SnapshotStore } from '@meshrelay/store';
import type { ResourceStatus } from '@meshrelay/translator';
import type { CarriedContributions } from '../carried-contributions.ts';
import type { DataPlaneReports } from '../data-plane-reports.ts';
import type { ConnectionTracker } from '../connections.ts';
import type { HeldOutputs } from '../held-outputs.ts';
import type { RelayMetrics } from '../metrics.ts';
import type { SharedHeldOutputs } from '../shared-held-outputs.ts';
import type { OutputHub } from '../output-hub.ts';
import type { ClusterRegistry, ClusterUpdate, RevocationResponse } from '@meshrelay/registry';
import type { TranslationLoop } from '../translation-loop.ts';
import type { WorkspacesView } from '../workspaces-file.ts';
import { clusterView } from './cluster-view.ts';
import { registerDataPlaneRoutes } from './data-plane-view.ts';
import { registerInterestRoutes, type InterestsViewSources } from './interests-view.ts';
import { registerRequestGuard } from './request-guard.ts';
import { listResources, parseResourceFilter } from './resource-view.ts';
import { registerTopologyRoutes } from './topology-view.ts';
import { registerUiRoutes } from './ui-routes.ts';

export interface ApiDeps {
  readonly registry: ClusterRegistry;
  readonly store: SnapshotStore;
  readonly outputs: OutputHub;
  readonly connections: ConnectionTracker;
  readonly loop: TranslationLoop;
  readonly held: HeldOutputs;
  /** Held outputs of every replica, and releases that reach the replica holding one. */
  readonly sharedHeld: SharedHeldOutputs;
  readonly contributions: CarriedContributions;
  /** What agents report of their proxies (GET /api/v1/xds/proxies). */
  readonly dataPlane?: DataPlaneReports;
  /** Interest leases and scoping (GET /api/v1/interests). */
  readonly interests?: Omit<InterestsViewSources, 'registry'>;
  /** The statuses the API shows (the translation's, with the data plane's findings); default the translation's. */
  readonly resourceStatuses?: () => readonly ResourceStatus[];
  readonly metrics: RelayMetrics;
  readonly replica: string;
  readonly relayAddress: string;
  readonly caBundlePem: string;
  /** The bearer token every /api/ call needs. */
  readonly adminToken: string;
  /** Host names the API and UI answer to (see request-guard.ts). */
  readonly allowedHosts: ReadonlySet<string>;
  readonly logger: Logger;
  readonly ready: () => boolean;
  /** The Workspaces the server runs with; the implicit global workspace is named as such. */
  readonly workspaces: WorkspacesView;
}

const NAME_PARAMS = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$' } },
} as const;

// Both end up in outputs (VirtualService hosts, AuthorizationPolicy principals): DNS names only.
const DNS_NAME_SCHEMA = { type: 'string', maxLength: DNS_NAME_MAX_LENGTH, pattern: DNS_NAME_PATTERN } as const;

const REGISTER_BODY = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 63 },
    clusterDomain: DNS_NAME_SCHEMA,
    trustDomain: DNS_NAME_SCHEMA,
    skipWarming: { type: 'boolean' },
  },
} as const;

const UPDATE_BODY = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { clusterDomain: DNS_NAME_SCHEMA, trustDomain: DNS_NAME_SCHEMA, skipWarming: { type: 'boolean' } },
} as const;

type NameRequest = FastifyRequest<{ Params: { name: string } }>;

/**
 * The versioned JSON API (/api/v1), the web UI, /healthz and /readyz. Every /api/ call needs the
 * admin token; Host and Origin are checked on all but the probes (request-guard.ts). Errors are
 * `{ code, message }` with the catalogue's HTTP status.
 */
export function buildApiServer(deps: ApiDeps) {
  const app = Fastify({
    loggerInstance: deps.logger.child({ component: 'http' }),
    disableRequestLogging: true,
    bodyLimit: 1024 * 1024,
    // Unknown fields are errors, not silently dropped: a dropped field is a lost intent.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false } },
  });
  app.setErrorHandler((err: Error & { validation?: unknown; statusCode?: number }, _req, reply) => {
    if (err.validation || (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500)) {
      return reply.code(err.statusCode ?? 400).send({ code: 'MESHRELAY_ERR_INVALID_ARGUMENT', message: err.message });
    }
    const e = toMeshrelayError(err);
    if (e.httpStatus >= 500) deps.logger.error({ err }, 'API request failed');
    return reply.code(e.httpStatus).send(e.toJSON());
  });
  app.setNotFoundHandler((req, reply) =>
    reply.code(404).send({ code: 'MESHRELAY_ERR_NOT_FOUND', message: `no route ${req.method} ${req.url}` }),
  );
  registerRequestGuard(app, { allowedHosts: deps.allowedHosts, adminToken: deps.adminToken });
  registerUiRoutes(app);

  const view = (name: string) => {
    const cluster = deps.registry.get(name);
    if (!cluster) throw new MeshrelayError('MESHRELAY_ERR_CLUSTER_NOT_FOUND', `cluster "${name}" is not registered`);
    return clusterView(cluster, { ...deps });
  };

  app.get('/healthz', async () => ({ status: 'ok', replica: deps.replica }));
  app.get('/readyz', async (_req, reply: FastifyReply) => {
    const ok = deps.ready();
    return reply.code(ok ? 200 : 503).send({ ready: ok, replica: deps.replica });
  });

  app.get('/api/v1/status', async () => ({
    replica: deps.replica,
    store: deps.store.health(),
    translation: deps.loop.status(),
    clusters: deps.registry.list().length,
    workspaces: deps.workspaces,
  }));

  if (deps.dataPlane) registerDataPlaneRoutes(app, deps.dataPlane, deps.registry);
  if (deps.interests) registerInterestRoutes(app, { ...deps.interests, registry: deps.registry });
  registerTopologyRoutes(app, deps);

  app.get('/api/v1/safe-mode', async () => safeModeView(deps.loop, deps.contributions));

  app.get('/api/v1/resources', async (req) => {
    const statuses = deps.resourceStatuses?.() ?? deps.loop.status().resources;
    return { resources: listResources(statuses, parseResourceFilter(req.query as Record<string, unknown>, statuses)) };
  });

  // DESIGN §13: the operator lets an absent cluster's carried contribution go (shared through the state directory).
  app.post(
    '/api/v1/clusters/:name/contribution/release',
    { schema: { params: NAME_PARAMS } },
    async (req: NameRequest) => {
      view(req.params.name);
      const inputHash = await deps.contributions.release(req.params.name, new Date());
      if (inputHash === undefined)
        throw new MeshrelayError(
          'MESHRELAY_ERR_SNAPSHOT_NOT_FOUND',
          `no contribution of cluster "${req.params.name}" is kept`,
        );
      deps.loop.trigger('contribution released');
      return { released: { cluster: req.params.name, inputHash } };
    },
  );

  app.get('/api/v1/outputs/held', async () => ({ held: await deps.sharedHeld.list() }));

  app.post('/api/v1/clusters/:name/output/release', { schema: { params: NAME_PARAMS } }, async (req: NameRequest) => {
    view(req.params.name);
    const released = await deps.sharedHeld.release(req.params.name);
    if (!released)
      throw new MeshrelayError(
        'MESHRELAY_ERR_SNAPSHOT_NOT_FOUND',
        `no output is held for cluster "${req.params.name}"`,
      );
    deps.logger.warn(
      { cluster: req.params.name, hash: released.hash, deleted: released.deleted },
      'operator released a held output',
    );
    return { released };
  });

  app.get('/api/v1/clusters', async () => ({ clusters: deps.registry.list().map((c) => clusterView(c, { ...deps })) }));

  app.post('/api/v1/clusters', { schema: { body: REGISTER_BODY } }, async (req, reply) => {
    const body = req.body as { name: string; clusterDomain?: string; trustDomain?: string; skipWarming?: boolean };
    const result = await deps.registry.register(body.name, body);
    deps.loop.trigger('cluster registered');
    return reply.code(201).send({
      cluster: view(body.name),
      token: result.token,
      tokenExpiresAt: result.tokenExpiresAt.toISOString(),
      relay: { address: deps.relayAddress, caBundlePem: deps.caBundlePem },
    });
  });

  app.get('/api/v1/clusters/:name', { schema: { params: NAME_PARAMS } }, async (req: NameRequest) =>
    view(req.params.name),
  );

  app.patch(
    '/api/v1/clusters/:name',
    { schema: { params: NAME_PARAMS, body: UPDATE_BODY } },
    async (req: NameRequest) => {
      await deps.registry.update(req.params.name, req.body as ClusterUpdate);
      deps.loop.trigger('cluster updated');
      return view(req.params.name);
    },
  );

  app.delete('/api/v1/clusters/:name', { schema: { params: NAME_PARAMS } }, async (req: NameRequest, reply) => {
    // The registry's change listener (wired by the composition root) ends the
    // cluster's streams and drops its snapshots, for this and every replica.
    await deps.registry.deregister(req.params.name);
    return reply.code(204).send();
  });

  app.post('/api/v1/clusters/:name/token', { schema: { params: NAME_PARAMS } }, async (req: NameRequest) => {
    const result = await deps.registry.rotateToken(req.params.name);
    return {
      token: result.token,
      tokenExpiresAt: result.tokenExpiresAt.toISOString(),
      relay: { address: deps.relayAddress, caBundlePem: deps.caBundlePem },
    };
  });

  // Every replica closes the cluster's streams and refuses its older certificates on the registry change.
  app.post(
    '/api/v1/clusters/:name/revoke',
    { schema: { params: NAME_PARAMS } },
    async (req: NameRequest): Promise<RevocationResponse> => {
      const result = await deps.registry.revoke(req.params.name);
      return {
        revokedBefore: result.revokedBefore.toISOString(),
        token: result.token,
        tokenExpiresAt: result.tokenExpiresAt.toISOString(),
        relay: { address: deps.relayAddress, caBundlePem: deps.caBundlePem },
      };
    },
  );

  app.get('/api/v1/clusters/:name/input', { schema: { params: NAME_PARAMS } }, async (req: NameRequest) => {
    view(req.params.name);
    const input = await deps.store.getInput(req.params.name);
    if (!input)
      throw new MeshrelayError(
        'MESHRELAY_ERR_SNAPSHOT_NOT_FOUND',
        `no input snapshot is held for cluster "${req.params.name}"`,
      );
    return input;
  });

  app.get('/api/v1/clusters/:name/output', { schema: { params: NAME_PARAMS } }, async (req: NameRequest) => {
    view(req.params.name);
    const output = deps.outputs.current(req.params.name) ?? (await deps.store.getOutput(req.params.name));
    if (!output)
      throw new MeshrelayError(
        'MESHRELAY_ERR_SNAPSHOT_NOT_FOUND',
        `no output snapshot exists yet for cluster "${req.params.name}"`,
      );
    return output;
  });

  return app;
}

const WAYS_OUT = [
  'reconnect the agent of each missing cluster',
  'deregister a cluster that is gone for good: meshctl cluster deregister NAME',
  'let translation go on without it: meshctl cluster update NAME --skip-warming',
];

/**
 * What holds translation on this replica, since when, until when, and how to
 * release it; and whose last known contribution it carries over (DESIGN §13).
 */
export function safeModeView(loop: TranslationLoop, contributions: CarriedContributions) {
  const status = loop.status();
  const gate = status.gate;
  return {
    active: gate.state === 'held',
    mode: gate.state === 'held' ? gate.mode : null,
    missing: gate.missing,
    since: gate.state === 'held' ? (status.heldSince?.toISOString() ?? null) : null,
    windowEndsAt: gate.state === 'held' ? (status.windowEndsAt?.toISOString() ?? null) : null,
    openReason: gate.state === 'open' ? gate.reason : null,
    waysOut: gate.state === 'held' ? WAYS_OUT : [],
    staleContributions: contributions.carried().map((c) => ({ ...c, since: c.since.toISOString() })),
  };
}
