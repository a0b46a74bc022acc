/**
 * VirtualGateway -> one Istio Gateway per workload selector, sent to the clusters where those
 * gateway workloads run (the selector's cluster, else every cluster). RouteTables bind to it
 * through `virtualGateways` (see virtual-service.ts).
 */
import { KINDS, type Resource } from '@meshrelay/api';
import type { VirtualGatewayListener, VirtualGatewaySpec } from '../gloo/gloo-types.ts';
import { describeOwned, type Owned } from '../gloo/inventory.ts';
import { outputMetadata, outputName } from './names.ts';
import type { ProblemSink } from '../engine/problems.ts';

export function virtualGatewayOutputName(name: string, workloadIndex = 0): string {
  return workloadIndex === 0 ? outputName(name, 'vg') : outputName(name, 'vg', String(workloadIndex));
}

function runsIn(selector: { readonly cluster?: string } | undefined, consumer: string): boolean {
  return selector?.cluster === undefined || selector.cluster === '' || selector.cluster === consumer;
}

/**
 * `namespace/name` of the Gateways a VirtualGateway produces in `consumer` (what a VirtualService lists in `gateways`).
 */
export function gatewayRefs(vg: Owned<VirtualGatewaySpec>, consumer: string): string[] {
  return vg.spec.workloads.flatMap((w, i) =>
    runsIn(w.selector, consumer) ? [`${vg.namespace}/${virtualGatewayOutputName(vg.name, i)}`] : [],
  );
}

const TLS_VERSIONS: Readonly<Record<string, string>> = {
  TLS_AUTO: 'TLS_AUTO',
  TLSv1_0: 'TLSV1_0',
  TLSv1_1: 'TLSV1_1',
  TLSv1_2: 'TLSV1_2',
  TLSv1_3: 'TLSV1_3',
};

function serverTls(l: VirtualGatewayListener): Record<string, unknown> | undefined {
  if (l.httpsRedirect) return { httpsRedirect: true };
  const t = l.tls;
  if (!t) return undefined;
  const tls: Record<string, unknown> = { mode: t.mode ?? 'PASSTHROUGH' };
  if (t.secretName !== undefined) tls['credentialName'] = t.secretName;
  if (t.verifySubjectAltName?.length) tls['subjectAltNames'] = [...t.verifySubjectAltName];
  const p = t.parameters;
  if (p?.minimumProtocolVersion) tls['minProtocolVersion'] = TLS_VERSIONS[p.minimumProtocolVersion];
  if (p?.maximumProtocolVersion) tls['maxProtocolVersion'] = TLS_VERSIONS[p.maximumProtocolVersion];
  if (p?.cipherSuites?.length) tls['cipherSuites'] = [...p.cipherSuites];
  return tls;
}

function protocolOf(l: VirtualGatewayListener): string {
  if (l.tcp) return l.tls ? 'TLS' : 'TCP';
  return l.tls && !l.httpsRedirect ? 'HTTPS' : 'HTTP';
}

function servers(vg: Owned<VirtualGatewaySpec>, problems: ProblemSink): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  (vg.spec.listeners ?? []).forEach((l, i) => {
    const number = l.port.number;
    if (number === undefined) {
      problems.add({
        cluster: vg.cluster,
        resource: describeOwned(vg),
        reason: `listeners[${i}]: a port selected by name is not supported by Meshrelay; listener left out`,
      });
      return;
    }
    const protocol = protocolOf(l);
    const server: Record<string, unknown> = {
      port: { number, name: `${protocol.toLowerCase()}-${number}`, protocol },
      hosts: ['*'],
    };
    const tls = serverTls(l);
    if (tls) server['tls'] = tls;
    out.push(server);
  });
  return out;
}

/** The Gateways of `vg` for `consumer` (only those whose workloads run there). */
export function buildGateways(vg: Owned<VirtualGatewaySpec>, consumer: string, problems: ProblemSink): Resource[] {
  const list = servers(vg, problems);
  return vg.spec.workloads.flatMap((w, i) => {
    if (!runsIn(w.selector, consumer)) return [];
    const labels = w.selector?.labels ?? {};
    return [
      {
        apiVersion: KINDS.Gateway.apiVersion,
        kind: KINDS.Gateway.kind,
        metadata: outputMetadata(virtualGatewayOutputName(vg.name, i), vg.namespace),
        spec: { selector: { ...labels }, servers: list },
      },
    ];
  });
}
