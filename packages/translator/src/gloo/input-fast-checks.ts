/**
 * Quick acceptance checks for the discovered kinds that make up nearly all of a large input
 * (a tier M input is ten Pods to one EndpointSlice and one Service). Each check is sound: it says
 * `true` only for a body its kind's schema (schemas/core.ts) accepts, so the schema need not run;
 * on `false` the schema runs and reports exactly what is wrong. A check may say `false` for a
 * body the schema would accept (a shape it does not know): that only costs the full check.
 */
import { isIP } from 'node:net';
import { KINDS, type KindRef } from '@meshrelay/api';

type Body = Readonly<Record<string, unknown>>;

/** What JSON Schema's `type: 'object'` accepts. */
function isObject(value: unknown): value is Body {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function optionalString(value: unknown): boolean {
  return value === undefined || typeof value === 'string';
}

function optionalIp(value: unknown): boolean {
  return value === undefined || (typeof value === 'string' && isIP(value) !== 0);
}

/** `status.podIPs`: a list of `{ ip }` with a valid IP each. */
function podIpsAccepted(value: unknown): boolean {
  if (value === undefined) return true;
  if (!Array.isArray(value)) return false;
  for (const item of value as unknown[]) {
    if (!isObject(item) || typeof item['ip'] !== 'string' || isIP(item['ip']) === 0) return false;
  }
  return true;
}

/** POD: `spec.{serviceAccountName,nodeName}` strings, `status.{phase}` a string, `status.{podIP,podIPs[].ip}` IPs. */
function podAccepted(r: Body): boolean {
  const spec = r['spec'];
  if (
    spec !== undefined &&
    !(isObject(spec) && optionalString(spec['serviceAccountName']) && optionalString(spec['nodeName']))
  )
    return false;
  const status = r['status'];
  return (
    status === undefined ||
    (isObject(status) &&
      optionalString(status['phase']) &&
      optionalIp(status['podIP']) &&
      podIpsAccepted(status['podIPs']))
  );
}

function optionalBoolean(value: unknown): boolean {
  return value === undefined || typeof value === 'boolean';
}

/** PORT_NUMBER: an integer in 1..65535. */
function isPortNumber(value: unknown): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 65535;
}

/** An optional list whose every item passes `item`. */
function optionalListOf(value: unknown, item: (x: unknown) => boolean): boolean {
  if (value === undefined) return true;
  if (!Array.isArray(value)) return false;
  for (const x of value as unknown[]) if (!item(x)) return false;
  return true;
}

/** An optional object whose listed fields are optional strings. */
function optionalStrings(value: unknown, fields: readonly string[]): boolean {
  return value === undefined || (isObject(value) && fields.every((f) => optionalString(value[f])));
}

/** ENDPOINT_SLICE `endpoints[]`: `addresses` (at least one string) required, typed conditions and references. */
function sliceEndpointAccepted(e: unknown): boolean {
  if (!isObject(e)) return false;
  const addresses = e['addresses'];
  if (
    !Array.isArray(addresses) ||
    addresses.length === 0 ||
    !(addresses as unknown[]).every((a) => typeof a === 'string')
  )
    return false;
  const conditions = e['conditions'];
  if (
    conditions !== undefined &&
    !(
      isObject(conditions) &&
      optionalBoolean(conditions['ready']) &&
      optionalBoolean(conditions['serving']) &&
      optionalBoolean(conditions['terminating'])
    )
  )
    return false;
  return (
    optionalString(e['nodeName']) &&
    optionalString(e['zone']) &&
    optionalStrings(e['targetRef'], ['kind', 'name', 'namespace'])
  );
}

/** A port of a slice (`port` optional) or of a Service (`port` required). */
function portAccepted(p: unknown, portRequired: boolean): boolean {
  if (!isObject(p) || !optionalString(p['name']) || !optionalString(p['protocol'])) return false;
  return p['port'] === undefined ? !portRequired : isPortNumber(p['port']);
}

const ADDRESS_TYPES = new Set<unknown>(['IPv4', 'IPv6', 'FQDN']);

/** ENDPOINT_SLICE: `addressType` one of IPv4, IPv6, FQDN; typed endpoints and ports. */
function sliceAccepted(r: Body): boolean {
  return (
    (r['addressType'] === undefined || ADDRESS_TYPES.has(r['addressType'])) &&
    optionalListOf(r['endpoints'], sliceEndpointAccepted) &&
    optionalListOf(r['ports'], (p) => portAccepted(p, false))
  );
}

/** A Service's `targetPort`: absent, a port number, or a non-empty name. */
function targetPortAccepted(value: unknown): boolean {
  return (
    value === undefined ||
    (typeof value === 'number' ? isPortNumber(value) : typeof value === 'string' && value.length > 0)
  );
}

function stringMapAccepted(value: unknown): boolean {
  return value === undefined || (isObject(value) && Object.values(value).every((v) => typeof v === 'string'));
}

/** SERVICE: typed ports (a port number required), selector, type, external IPs and load balancer ingress. */
function serviceAccepted(r: Body): boolean {
  const spec = r['spec'];
  if (spec !== undefined) {
    if (!isObject(spec) || !optionalString(spec['type']) || !stringMapAccepted(spec['selector'])) return false;
    if (!optionalListOf(spec['ports'], (p) => portAccepted(p, true) && targetPortAccepted((p as Body)['targetPort'])))
      return false;
    if (!optionalListOf(spec['externalIPs'], (ip) => typeof ip === 'string' && isIP(ip) !== 0)) return false;
  }
  const status = r['status'];
  if (status === undefined) return true;
  if (!isObject(status)) return false;
  const lb = status['loadBalancer'];
  if (lb === undefined) return true;
  return (
    isObject(lb) &&
    optionalListOf(lb['ingress'], (i) => isObject(i) && optionalIp(i['ip']) && optionalString(i['hostname']))
  );
}

/** NODE: any object (its labels are checked with the metadata). */
function nodeAccepted(): boolean {
  return true;
}

const QUICK_CHECKS = new Map<KindRef, (r: Body) => boolean>([
  [KINDS.Pod, podAccepted],
  [KINDS.Node, nodeAccepted],
  [KINDS.EndpointSlice, sliceAccepted],
  [KINDS.Service, serviceAccepted],
]);

/** The quick check of `kind`, if it has one (see the module comment). */
export function quickCheckOf(kind: KindRef): ((r: Body) => boolean) | undefined {
  return QUICK_CHECKS.get(kind);
}
