/**
 * ExternalService -> ServiceEntry (MESH_EXTERNAL) + a DestinationRule per host when a port
 * originates TLS; ExternalEndpoint -> WorkloadEntry (its labels let an ExternalService's
 * selector pick it). Both are the same in every cluster.
 */
import { isIP } from 'node:net';
import { KINDS, type Resource } from '@meshrelay/api';
import type { ExternalEndpointSpec, ExternalServicePort, ExternalServiceSpec } from '../gloo/gloo-types.ts';
import type { Owned } from '../gloo/inventory.ts';
import { outputMetadata, outputName } from './names.ts';
import { hasLabels } from '../gloo/selectors.ts';

export function externalServiceOutputName(name: string, hostIndex = 0): string {
  return hostIndex === 0 ? outputName(name, 'es') : outputName(name, 'es', String(hostIndex));
}

function portName(p: ExternalServicePort): string {
  return p.name ?? `${p.protocol.toLowerCase()}-${p.number}`;
}

function localityString(l: ExternalEndpointSpec['locality']): string | undefined {
  const parts = [l?.region, l?.zone, l?.subZone];
  const last = parts.findLastIndex((p) => p !== undefined && p !== '');
  return last < 0
    ? undefined
    : parts
        .slice(0, last + 1)
        .map((p) => p ?? '')
        .join('/');
}

/** The ExternalEndpoints an ExternalService selects: same namespace, labels a superset of its selector. */
function selectedEndpoints(
  es: Owned<ExternalServiceSpec>,
  endpoints: readonly Owned<ExternalEndpointSpec>[],
): Owned<ExternalEndpointSpec>[] {
  if (!es.spec.selector || Object.keys(es.spec.selector).length === 0) return [];
  return endpoints.filter((ee) => ee.namespace === es.namespace && hasLabels(ee.labels, es.spec.selector));
}

/**
 * The ServiceEntry of an ExternalService and the ExternalEndpoints it selects (source ids), for the sources annotation.
 */
export function buildExternalServiceEntry(
  es: Owned<ExternalServiceSpec>,
  endpoints: readonly Owned<ExternalEndpointSpec>[],
): { resource: Resource; endpointSources: string[] } {
  const selected = selectedEndpoints(es, endpoints);
  const ports = es.spec.ports.map((p) => ({
    number: p.number,
    name: portName(p),
    protocol: p.protocol,
    ...(p.targetPort?.number !== undefined ? { targetPort: p.targetPort.number } : {}),
  }));
  const spec: Record<string, unknown> = { hosts: [...es.spec.hosts], ports, location: 'MESH_EXTERNAL' };
  if (es.spec.addresses?.length) spec['addresses'] = [...es.spec.addresses];
  if (es.spec.subjectAltNames?.length) spec['subjectAltNames'] = [...es.spec.subjectAltNames];
  if (es.spec.selector && Object.keys(es.spec.selector).length > 0) {
    spec['workloadSelector'] = { labels: { ...es.spec.selector } };
    spec['resolution'] = selected.every((ee) => isIP(ee.spec.address) !== 0) ? 'STATIC' : 'DNS';
  } else {
    spec['resolution'] = 'DNS';
  }
  return {
    resource: {
      apiVersion: KINDS.ServiceEntry.apiVersion,
      kind: KINDS.ServiceEntry.kind,
      metadata: outputMetadata(externalServiceOutputName(es.name), es.namespace),
      spec,
    },
    endpointSources: selected.map((ee) => ee.source),
  };
}

/** Client-side TLS per port, as DestinationRules (one per host); none when no port originates TLS. */
export function buildExternalDestinationRules(es: Owned<ExternalServiceSpec>): Resource[] {
  const portLevelSettings = es.spec.ports.flatMap((p) => {
    const t = p.clientsideTls;
    if (!t) return [];
    const tls: Record<string, unknown> = { mode: t.mode ?? 'SIMPLE' };
    if (t.sni !== undefined) tls['sni'] = t.sni;
    if (t.clientCertificate !== undefined) tls['clientCertificate'] = t.clientCertificate;
    if (t.privateKey !== undefined) tls['privateKey'] = t.privateKey;
    if (t.caCertificates !== undefined) tls['caCertificates'] = t.caCertificates;
    if (t.credentialName !== undefined) tls['credentialName'] = t.credentialName;
    if (t.insecureSkipVerify !== undefined) tls['insecureSkipVerify'] = t.insecureSkipVerify;
    if (es.spec.subjectAltNames?.length) tls['subjectAltNames'] = [...es.spec.subjectAltNames];
    return [{ port: { number: p.number }, tls }];
  });
  if (portLevelSettings.length === 0) return [];
  return es.spec.hosts.map((host, i) => ({
    apiVersion: KINDS.DestinationRule.apiVersion,
    kind: KINDS.DestinationRule.kind,
    metadata: outputMetadata(externalServiceOutputName(es.name, i), es.namespace),
    spec: { host, trafficPolicy: { portLevelSettings } },
  }));
}

export function buildWorkloadEntry(ee: Owned<ExternalEndpointSpec>): Resource {
  const spec: Record<string, unknown> = { address: ee.spec.address };
  if (ee.spec.ports?.length) spec['ports'] = Object.fromEntries(ee.spec.ports.map((p) => [p.name, p.number]));
  if (Object.keys(ee.labels).length > 0) spec['labels'] = { ...ee.labels };
  const locality = localityString(ee.spec.locality);
  if (locality !== undefined) spec['locality'] = locality;
  return {
    apiVersion: KINDS.WorkloadEntry.apiVersion,
    kind: KINDS.WorkloadEntry.kind,
    metadata: outputMetadata(outputName(ee.name, 'ee'), ee.namespace),
    spec,
  };
}
