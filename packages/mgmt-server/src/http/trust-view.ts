import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance, RawServerDefault } from 'fastify';
import { Gauge, type Registry } from 'prom-client';
import type { ClusterRegistry } from '@meshrelay/registry';
import type { MeshTrustService } from '../mesh-trust/mesh-trust-service.ts';
import { earliestOf, trustStatus } from '../mesh-trust/trust-status.ts';

/**
 * GET /api/v1/trust: roots, generation, phase and since when, what holds the rotation, and per
 * registered cluster its applied generation, intermediate and workloads near expiry.
 * POST /api/v1/trust/rotate: rotates in a new generated root (409 while a rotation is under way).
 * Both sit behind the admin credential as every /api/v1 route does. Each answer runs a tick
 * first, so it shows the shared state as of now rather than as of the last tick.
 */
export function registerTrustRoutes<L extends FastifyBaseLogger>(
  app: FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, L>,
  trust: MeshTrustService,
  registry: Pick<ClusterRegistry, 'list'>,
  now: () => Date,
): void {
  const status = async () => {
    await trust.tick();
    return trustStatus(
      trust.view(),
      registry.list().map((c) => c.metadata.name),
      now(),
    );
  };
  app.get('/api/v1/trust', status);
  app.post('/api/v1/trust/rotate', async (_req, reply) => {
    await trust.rotate();
    return reply.code(202).send(await status());
  });
}

/** Expiry gauges of the mesh trust, read from the last tick at scrape time. */
export function registerTrustMetrics(metrics: Registry, trust: MeshTrustService): void {
  const registers = [metrics];
  new Gauge({
    name: 'meshrelay_mesh_root_expiry_timestamp_seconds',
    help: 'When each active mesh root expires (unix seconds)',
    labelNames: ['root_id'],
    registers,
    collect(this: Gauge<'root_id'>) {
      this.reset();
      for (const root of trust.view().state?.roots ?? [])
        this.set({ root_id: root.id }, Date.parse(root.notAfter) / 1000);
    },
  });
  new Gauge({
    name: 'meshrelay_mesh_intermediate_expiry_timestamp_seconds',
    help: "When each cluster's intermediate CA expires, as its agent last reported (unix seconds)",
    labelNames: ['cluster'],
    registers,
    collect(this: Gauge<'cluster'>) {
      this.reset();
      for (const r of trust.view().records.values())
        if (r.intermediateNotAfterMs > 0) this.set({ cluster: r.cluster }, r.intermediateNotAfterMs / 1000);
    },
  });
  new Gauge({
    name: 'meshrelay_mesh_trust_phase',
    help: 'The mesh root rotation phase: 0 steady, 1 new root in bundles, 2 signing with it, 3 old root removed',
    registers,
    collect(this: Gauge) {
      this.reset();
      const state = trust.view().state;
      if (state !== undefined) this.set(state.phase);
    },
  });
  new Gauge({
    name: 'meshrelay_mesh_workload_cert_expiry_timestamp_seconds',
    help: 'The earliest expiry among the workload certificates each cluster agent last listed (unix seconds)',
    labelNames: ['cluster'],
    registers,
    collect(this: Gauge<'cluster'>) {
      this.reset();
      for (const r of trust.view().records.values()) {
        const earliest = earliestOf(r.workloads);
        if (earliest !== undefined) this.set({ cluster: r.cluster }, earliest / 1000);
      }
    },
  });
}
