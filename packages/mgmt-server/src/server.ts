import { createServer, type Server as HttpServer } from 'node:http';
import type { Logger } from 'pino';
import { GRPC_STATUS, patchLimits } from '@meshrelay/api';
import { generateKeyPairAsync, issueServerCertificate, type CaBundle } from '@meshrelay/certs';
import { createMemorySnapshotStore, createRedisSnapshotStore, type SnapshotStore } from '@meshrelay/store';
import { loadRedisEndpoint, redisConfigured } from './redis-endpoint-config.ts';
import { createIstioValidator, type OutputValidator } from '@meshrelay/translator';
import type { AdminCredential } from './admin-credential.ts';
import { CarriedContributions } from './carried-contributions.ts';
import type { ServerConfig } from './config.ts';
import { ConnectionTracker } from './connections.ts';
import { openDurableState } from './durable-state.ts';
import { HeldOutputs } from './held-outputs.ts';
import { buildApiServer } from './http/api-server.ts';
import { closeHttpServer } from './http/close-server.ts';
import { allowedHostsOf } from './http/request-guard.ts';
import { InputIntake } from './input-intake.ts';
import { MemoryReclaimer } from './runtime.ts';
import { RelayMetrics } from './metrics.ts';
import { OutputHub } from './output-hub.ts';
import { OutputPersister } from './output-persister.ts';
import type { ClusterRegistry, RegistryChange } from '@meshrelay/registry';
import type { RelayContext } from './relay/relay-context.ts';
import { startRelayServer } from './relay/relay-server.ts';
import { StreamAdmission } from './relay/stream-admission.ts';
import { TokenBindings } from './relay/token-bindings.ts';
import { closeRevokedStreams } from './relay/stream-certificates.ts';
import { createRelayServerCredentials } from './relay/tls-credentials.ts';
import { DataPlaneReports } from './data-plane-reports.ts';
import { InterestLeases } from './interests/interest-leases.ts';
import { registerInterestMetrics } from './http/interests-view.ts';
import { DataPlaneStatusView } from './data-plane-status.ts';
import { registerTrustMetrics, registerTrustRoutes } from './http/trust-view.ts';
import { openMeshTrust } from './mesh-trust/open-mesh-trust.ts';
import { registerDataPlaneMetrics } from './http/data-plane-view.ts';
import { SharedHeldOutputs } from './shared-held-outputs.ts';
import { StreamClaims } from './stream-claims.ts';
import { TranslationLoop } from './translation-loop.ts';
import { liveWorkspacesView, openManagementResources, type ManagementResources } from './management-resources.ts';

export interface ManagementServer {
  readonly relayPort: number;
  readonly httpPort: number;
  readonly metricsPort: number;
  readonly ca: CaBundle;
  /** The admin credential of the HTTP API and where it is kept. */
  readonly admin: AdminCredential;
  readonly registry: ClusterRegistry;
  readonly store: SnapshotStore;
  readonly loop: TranslationLoop;
  readonly outputs: OutputHub;
  readonly held: HeldOutputs;
  /** The relay streams open on this replica. */
  readonly connections: ConnectionTracker;
  /**
   * How many clusters each per-cluster structure holds state for now (debug and bounded-memory
   * checks: after deregistration these count only the clusters still registered).
   */
  debugCounts(): Readonly<Record<string, number>>;
  /** The last known contributions of absent clusters (DESIGN §13). */
  readonly contributions: CarriedContributions;
  /** The management plane's Workspaces and RootTrustPolicy (file or Workspace CRs). */
  readonly management: ManagementResources;
  /** Tells every connected agent to move elsewhere (go-away with retry-after), then stops. */
  stop(): Promise<void>;
}

const SERVER_CERT_LIFETIME_SECONDS = 365 * 24 * 3600;

/**
 * The composition root: builds every component from the config, wires them
 * together and starts them in order (durable state, store, translation, relay,
 * HTTP, metrics). stop() undoes it in reverse.
 */
export async function startManagementServer(config: ServerConfig, logger: Logger): Promise<ManagementServer> {
  const startedAt = Date.now();
  const now = () => new Date();
  const log = logger.child({ replica: config.replicaName });
  // The serving key is made on the thread pool while the durable state opens (an RSA key takes
  // a few hundred ms: a restart in a reconnect storm waits for neither in turn).
  const serverKey = generateKeyPairAsync();
  const durable = await openDurableState(config, log, now).catch(async (err: unknown) => {
    await serverKey.catch(() => undefined);
    throw err;
  });
  const { ca, registry } = durable;
  const hosts = ['localhost', '127.0.0.1', '::1', ...config.serverHosts];
  const serverCert = issueServerCertificate(ca, {
    hosts,
    lifetimeSeconds: SERVER_CERT_LIFETIME_SECONDS,
    now: now(),
    keyPair: await serverKey,
  });
  // Before anything translates: Workspace CRs that cannot be listed stop the start here.
  const management = await openManagementResources(config, log).catch(async (err: unknown) => {
    await durable.close();
    throw err;
  });

  let store: SnapshotStore;
  if (redisConfigured(config)) {
    // Unreadable credential or certificate files stop the start here, naming the flag.
    const endpoint = await loadRedisEndpoint(config);
    store = createRedisSnapshotStore({
      url: config.redisUrl ?? '',
      endpoint,
      replicaId: config.replicaName,
      logger: log,
    });
  } else {
    log.warn('no REDIS_URL: running memory-only; inputs are not shared between replicas and are lost on restart');
    store = createMemorySnapshotStore();
  }
  const connections = new ConnectionTracker();
  const outputs = new OutputHub();
  const held = new HeldOutputs();
  const sharedHeld = new SharedHeldOutputs(
    durable.documents('held-outputs'),
    config.replicaName,
    held,
    log.child({ component: 'held-outputs' }),
  );
  sharedHeld.start();
  const claims = new StreamClaims(
    durable.documents('stream-claims'),
    config.replicaName,
    connections,
    log.child({ component: 'stream-claims' }),
  );
  claims.start();
  const contributions = new CarriedContributions(
    durable.documents('contributions'),
    log.child({ component: 'contributions' }),
  );
  const dataPlane = new DataPlaneReports(
    durable.documents('data-plane'),
    config.replicaName,
    log.child({ component: 'data-plane' }),
  );
  dataPlane.start();
  const dataPlaneStatuses = new DataPlaneStatusView();
  const tokenBindings = new TokenBindings(
    durable.documents('token-bindings'),
    log.child({ component: 'token-bindings' }),
  );
  const metrics = new RelayMetrics(config.replicaName, connections);
  registerDataPlaneMetrics(metrics.registry, dataPlane);
  const meshTrust = await openMeshTrust({
    durable,
    management,
    registry,
    tickMs: config.trustTickMs,
    policyIsCr: config.rootTrustPolicyFile === undefined,
    logger: log.child({ component: 'mesh-trust' }),
    now,
  });
  registerTrustMetrics(metrics.registry, meshTrust);
  // Leases are kept (and shown) whether or not outputs are scoped by them (DESIGN §17).
  const interests = new InterestLeases({
    documents: durable.documents('interests'),
    idleMs: config.interestIdleMs,
    logger: log.child({ component: 'interests' }),
  });
  await interests.start();
  registerInterestMetrics(metrics.registry, interests);
  metrics.setRedisUpProbe(() => store.health().redisUp);
  const persister = new OutputPersister({
    store,
    logger: log.child({ component: 'output-persister' }),
    onFailure: (cluster) => metrics.outputWriteFailures.inc({ cluster }),
  });
  // The intake's verdicts on the inputs it accepted, which translation trusts (InputJudgements).
  const intake = new InputIntake(store, registry, log);
  const loop = new TranslationLoop({
    registry,
    store,
    outputs,
    persister,
    vips: durable.vips,
    validator: warmedValidator(),
    metrics,
    logger: log.child({ component: 'translation' }),
    gate: { safeMode: config.safeMode, safeStartWindowSeconds: config.safeStartWindowSeconds },
    contributions,
    debounceMs: config.translationDebounceMs,
    uptimeMs: () => Date.now() - startedAt,
    workspaces: () => management.workspaces(),
    ...(config.interestScopedOutputs ? { scope: interests } : {}),
    judgements: intake.judgements,
  });
  const unsubscribeInterests = config.interestScopedOutputs
    ? interests.onChange((changed) => loop.trigger(`interest changed in ${changed.join(', ')}`))
    : () => undefined;
  const unsubscribeWorkspaces = management.onWorkspacesChange((reason) => loop.trigger(reason));
  metrics.setStateProbes(
    () => loop.status().gate,
    () => held.list(),
  );
  metrics.setCarriedProbe(() => contributions.carried().map((c) => c.cluster));
  contributions.watch(() => loop.trigger('a carried contribution changed on another replica'));
  const reclaimer = new MemoryReclaimer({
    idleMs: config.memoryReclaimIdleMs,
    logger: log.child({ component: 'memory' }),
    onReclaim: (r) => {
      metrics.memoryReclaimDuration.observe(r.durationMs / 1000);
      metrics.memoryReclaimedBytes.inc(Math.max(0, r.heapUsedBefore - r.heapUsedAfter));
    },
  });

  const resourceStatuses = () =>
    dataPlaneStatuses.view(loop.status().resources, dataPlane.version, () => dataPlane.list());
  const ctx: RelayContext = {
    ca,
    trustDomain: config.trustDomain,
    clientCertLifetimeSeconds: config.clientCertLifetimeSeconds,
    registry,
    store,
    intake,
    outputs,
    held,
    blastRadius: { maxDeleteShare: config.maxDeleteShare, minResources: config.blastRadiusMinResources },
    contributions,
    connections,
    admission: new StreamAdmission({ ratePerSecond: config.relayAdmitRate }),
    metrics,
    limits: {
      maxSnapshotBytes: config.maxSnapshotBytes,
      maxResources: config.maxResources,
      patch: patchLimits({
        maxOpsPerDelta: config.maxDeltaPatchOps,
        maxOpsPerResource: config.maxResourcePatchOps,
        maxWork: config.maxDeltaPatchWork,
      }),
      heartbeatIntervalMs: config.heartbeatIntervalMs,
      heartbeatTimeoutMs: config.heartbeatTimeoutMs,
      chunkBytes: 256 * 1024,
      snapshotTransferTimeoutMs: config.snapshotTransferTimeoutMs,
    },
    logger: log.child({ component: 'relay' }),
    now,
    onInputChanged: (cluster) => loop.trigger(`input from ${cluster}`),
    // Statuses carry what agents report their proxies cannot take (data-plane-status.ts).
    resourceStatuses: {
      current: () => (loop.status().lastRunAt === undefined ? undefined : resourceStatuses()),
      subscribe: (listener) => {
        const stopLoop = loop.onStatus(() => listener());
        const stopDataPlane = dataPlane.onChange(listener);
        return () => {
          stopLoop();
          stopDataPlane();
        };
      },
    },
    dataPlane,
    interests,
  };

  const unsubscribeRegistry = registry.onChange((change: RegistryChange) => {
    if (change.type === 'deregistered') {
      for (const stream of connections.streams(change.name)) {
        stream.terminate(
          GRPC_STATUS.UNAUTHENTICATED,
          `MESHRELAY_ERR_UNAUTHENTICATED: cluster "${change.name}" was deregistered`,
        );
      }
      connections.forget(change.name);
      outputs.forget(change.name);
      persister.forget(change.name);
      held.forget(change.name);
      dataPlane.forget(change.name);
      void meshTrust
        .forget(change.name)
        .catch((err: unknown) =>
          log.warn({ err, cluster: change.name }, 'could not drop the mesh trust record of a deregistered cluster'),
        );
      interests.forget(change.name);
      void contributions
        .forget(change.name)
        .catch((err: unknown) =>
          log.warn({ err, cluster: change.name }, 'could not drop the kept contribution of a deregistered cluster'),
        );
      void claims
        .forget(change.name)
        .catch((err: unknown) =>
          log.warn({ err, cluster: change.name }, 'could not drop the stream claims of a deregistered cluster'),
        );
      void tokenBindings
        .forget(change.name)
        .catch((err: unknown) =>
          log.warn({ err, cluster: change.name }, 'could not drop the relay token bindings of a deregistered cluster'),
        );
      metrics.forgetCluster(change.name);
      void Promise.all([store.deleteInput(change.name), store.deleteOutput(change.name)]).catch((err: unknown) =>
        log.warn({ err, cluster: change.name }, 'could not drop the snapshots of a deregistered cluster'),
      );
      log.info({ cluster: change.name }, 'cluster deregistered: streams closed, snapshots dropped');
    }
    if (change.type === 'updated') closeRevokedStreams(connections, change.cluster, log);
    loop.trigger(`registry ${change.type}`);
  });
  const unsubscribeStore = store.onInputChanged((event) =>
    loop.trigger(`input from ${event.cluster} via replica ${event.replica}`),
  );
  // A translation under way when a cluster was deregistered publishes and persists its output after
  // the cleanup above; each finished run drops outputs of clusters that are no longer registered.
  const unsubscribeSweep = loop.onStatus(() => {
    for (const cluster of outputs.all().keys()) {
      if (registry.get(cluster) !== undefined) continue;
      outputs.forget(cluster);
      persister.forget(cluster);
      void store
        .deleteOutput(cluster)
        .catch((err: unknown) => log.warn({ err, cluster }, 'could not drop the output of a deregistered cluster'));
      log.info({ cluster }, 'dropped the output a translation under way built for a cluster deregistered meanwhile');
    }
  });

  // Agents reconnecting after a restart resume by the version Redis holds: answered before the
  // store's first connection, each would be refused and send its whole input again.
  if (redisConfigured(config)) await firstRedisConnection(store, REDIS_START_WAIT_MS, log);
  const relay = await startRelayServer(ctx, {
    host: config.relayHost,
    port: config.relayPort,
    credentials: createRelayServerCredentials(
      ca.certPem,
      serverCert.certPem,
      serverCert.keyPem,
      config.tlsHandshakeTimeoutMs,
    ),
    registrationFailures: {
      max: config.registrationMaxFailures,
      windowMs: config.registrationFailureWindowSeconds * 1000,
    },
    tokenBindings,
    maxConnectionsPerPeer: config.maxConnectionsPerPeer,
    meshTrust,
  });
  let draining = false;
  const api = buildApiServer({
    registry,
    store,
    outputs,
    connections,
    loop,
    held,
    sharedHeld,
    contributions,
    dataPlane,
    interests: { leases: interests, scoped: config.interestScopedOutputs, scoping: () => loop.scoping() },
    resourceStatuses,
    metrics,
    replica: config.replicaName,
    relayAddress: config.advertiseAddress ?? `localhost:${relay.port}`,
    caBundlePem: ca.certPem,
    adminToken: durable.admin.token,
    allowedHosts: allowedHostsOf({
      httpHost: config.httpHost,
      serverHosts: config.serverHosts,
      advertiseAddress: config.advertiseAddress,
      extra: config.httpAllowedHosts,
    }),
    logger: log,
    ready: () => !draining,
    workspaces: liveWorkspacesView(management),
  });
  registerTrustRoutes(api, meshTrust, registry, now);
  await api.listen({ host: config.httpHost, port: config.httpPort });
  const httpPort = (api.server.address() as { port: number }).port;
  const metricsServer = await startMetricsServer(metrics, config.metricsHost, config.metricsPort);
  const metricsPort = (metricsServer.address() as { port: number }).port;
  loop.start();
  reclaimer.start();
  log.info(
    { adminToken: durable.admin.location },
    `admin credential (every /api/v1 call needs it as a bearer token): ${durable.admin.location}`,
  );
  log.info(
    {
      relayHost: config.relayHost,
      relayPort: relay.port,
      httpHost: config.httpHost,
      httpPort,
      metricsHost: config.metricsHost,
      metricsPort,
      registry: config.registry,
      stateDir: config.stateDir,
      redis: redisConfigured(config) ? 'on' : 'off',
    },
    'management server started',
  );

  return {
    relayPort: relay.port,
    httpPort,
    metricsPort,
    ca,
    admin: durable.admin,
    registry,
    store,
    loop,
    outputs,
    held,
    connections,
    debugCounts: () => ({
      outputHub: outputs.trackedClusters(),
      outputPersister: persister.size(),
      heldOutputs: held.list().length,
      metrics: metrics.trackedClusters(),
      storeInputs: store.memoryInputs().size,
      storeBookkeeping: store.bookkeepingSize(),
      streams: connections.streams().length,
    }),
    contributions,
    management,
    stop: async () => {
      draining = true;
      const streams = connections.streams();
      for (const stream of streams) stream.goAway(config.drainRetryAfterMs, 'management replica is shutting down');
      log.info({ streams: streams.length }, 'drain: told agents to move');
      unsubscribeRegistry();
      unsubscribeStore();
      unsubscribeSweep();
      unsubscribeWorkspaces();
      unsubscribeInterests();
      reclaimer.stop();
      await relay.stop();
      await meshTrust.stop();
      await loop.stop();
      await persister.close();
      contributions.stop();
      await sharedHeld.stop();
      await dataPlane.stop();
      await interests.stop();
      await claims.stop();
      await closeHttpServer(api.server, () => api.close());
      await closeHttpServer(metricsServer, () => new Promise<void>((resolve) => metricsServer.close(() => resolve())));
      await store.close();
      await management.close();
      await durable.close();
      log.info('management server stopped');
    },
  };
}

/** How long a starting server waits for Redis before it serves without it (DESIGN §7: Redis down). */
const REDIS_START_WAIT_MS = 5000;

/** Resolves once the store is connected to Redis, or after `waitMs` (logged: the server then starts without it). */
async function firstRedisConnection(store: SnapshotStore, waitMs: number, log: Logger): Promise<void> {
  if (store.health().redisUp) return;
  let unsubscribe = (): void => undefined;
  const up = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), waitMs);
    unsubscribe = store.onHealthChange((health) => {
      if (!health.redisUp) return;
      clearTimeout(timer);
      resolve(true);
    });
    if (store.health().redisUp) {
      clearTimeout(timer);
      resolve(true);
    }
  });
  unsubscribe();
  if (!up)
    log.warn(
      { waitedMs: waitMs },
      'redis is not reachable yet; serving from memory until it is (agents that resume now send their snapshots again)',
    );
}

/**
 * The Istio output validator with every output kind's validator ready (each kind's, and the
 * per-endpoint one shared ServiceEntry endpoints are checked against): loaded from the code
 * generated ahead of time, or compiled when the CRD bundle is not the one it was generated from
 * (see docs/design/decisions/README.md#schema-validators-generated). Done here, before the relay
 * port opens, it is not part of the first translation while agents' streams wait on heartbeats.
 */
function warmedValidator(): OutputValidator {
  return (sharedValidator ??= createIstioValidator({ precompile: true }));
}

/** One per process: it holds only compiled schemas, so servers started in one process (tests) share it. */
let sharedValidator: OutputValidator | undefined;

async function startMetricsServer(metrics: RelayMetrics, host: string, port: number): Promise<HttpServer> {
  const server = createServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end('see /metrics\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      (err: unknown) => res.writeHead(500).end(String(err)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
