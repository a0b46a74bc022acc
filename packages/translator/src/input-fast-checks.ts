/**
 * Quick acceptance checks for the discovered kinds that make up nearly all of a large input
 * (a tier M input is five parts Pods to one part everything else). Each check is sound: it says
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
  if (spec !== undefined && !(isObject(spec) && optionalString(spec['serviceAccountName']) && optionalString(spec['nodeName']))) return false;
  const status = r['status'];
  return status === undefined || (isObject(status) && optionalString(status['phase']) && optionalIp(status['podIP']) && podIpsAccepted(status['podIPs']));
}

/** NODE: any object (its labels are checked with the metadata). */
function nodeAccepted(): boolean {
  return true;
}

const QUICK_CHECKS = new Map<KindRef, (r: Body) => boolean>([
  [KINDS.Pod, podAccepted],
  [KINDS.Node, nodeAccepted],
]);

/** The quick check of `kind`, if it has one (see the module comment). */
export function quickCheckOf(kind: KindRef): ((r: Body) => boolean) | undefined {
  return QUICK_CHECKS.get(kind);
}
