// RootTrustPolicy (admin.gloo.solo.io/v2): the root of trust Gloo shares between meshes, with
// Gloo's field names (solo-apis root_trust_policy.proto and CommonCertOptions). Parsed and
// checked here into a typed value; the management server's mesh trust acts on it (the mesh root,
// each cluster's intermediate CA). The relay CA is not part of it and never changes with it.

import { isRecord } from '@meshrelay/api';

/** Gloo's CommonCertOptions: how a generated certificate is made. Absent fields take Gloo's defaults. */
export interface CertOptions {
  /** Days before the certificate expires (Gloo's default 365). */
  readonly ttlDays?: number;
  /** Size of the private key; despite the name, in bits as Gloo uses it (default 4096). */
  readonly rsaKeySizeBytes?: number;
  /** Organization of the certificate (default "gloo-mesh"). */
  readonly orgName?: string;
  /** Share of the lifetime before expiry at which rotation starts, 0 < ratio < 1. */
  readonly secretRotationGracePeriodRatio?: number;
}

/** Where the root CA comes from: generated with options, or a Secret (same namespace unless given). */
export type MgmtServerCa =
  | { readonly type: 'generated'; readonly options: CertOptions }
  | { readonly type: 'secretRef'; readonly secretRef: { readonly name: string; readonly namespace: string } };

export interface RootTrustPolicy {
  readonly name: string;
  readonly namespace: string;
  /** Unset in the object: Gloo then generates a self-signed root, as `generated: {}` does. */
  readonly mgmtServerCa: MgmtServerCa;
  readonly intermediateCertOptions: CertOptions;
  readonly autoRestartPods: boolean;
}

type Parsed<T> = { readonly value: T } | { readonly problem: string };

const CERT_OPTION_FIELDS = ['ttlDays', 'rsaKeySizeBytes', 'orgName', 'secretRotationGracePeriodRatio'];
const MIN_RSA_BITS = 2048;
const MAX_RSA_BITS = 8192;
// Longer than any root a mesh keeps; beyond it a typo (days for hours × 24…) is more likely than intent.
const MAX_TTL_DAYS = 36_500;

function unknownFields(value: Record<string, unknown>, allowed: readonly string[], path: string): string | undefined {
  const extra = Object.keys(value).filter((k) => !allowed.includes(k));
  return extra.length === 0 ? undefined : `${path}.${extra[0] ?? ''}: unknown field (allowed: ${allowed.join(', ')})`;
}

function parseCertOptions(value: unknown, path: string): Parsed<CertOptions> {
  if (value === undefined || value === null) return { value: {} };
  if (!isRecord(value)) return { problem: `${path}: must be an object` };
  const extra = unknownFields(value, CERT_OPTION_FIELDS, path);
  if (extra) return { problem: extra };
  const { ttlDays, rsaKeySizeBytes, orgName, secretRotationGracePeriodRatio: ratio } = value;
  if (
    ttlDays !== undefined &&
    (!Number.isInteger(ttlDays) || (ttlDays as number) < 1 || (ttlDays as number) > MAX_TTL_DAYS)
  ) {
    return {
      problem: `${path}.ttlDays: must be a whole number of days from 1 to ${MAX_TTL_DAYS}, not ${JSON.stringify(ttlDays)}`,
    };
  }
  if (
    rsaKeySizeBytes !== undefined &&
    (!Number.isInteger(rsaKeySizeBytes) ||
      (rsaKeySizeBytes as number) < MIN_RSA_BITS ||
      (rsaKeySizeBytes as number) > MAX_RSA_BITS)
  ) {
    return {
      problem: `${path}.rsaKeySizeBytes: must be a whole number from ${MIN_RSA_BITS} to ${MAX_RSA_BITS} (the key size in bits, as Gloo uses it), not ${JSON.stringify(rsaKeySizeBytes)}`,
    };
  }
  if (orgName !== undefined && (typeof orgName !== 'string' || orgName.trim() === ''))
    return { problem: `${path}.orgName: must be a non-empty string` };
  if (ratio !== undefined && (typeof ratio !== 'number' || !(ratio > 0 && ratio < 1))) {
    return {
      problem: `${path}.secretRotationGracePeriodRatio: must be a number between 0 and 1 (exclusive), not ${JSON.stringify(ratio)}`,
    };
  }
  return {
    value: {
      ...(ttlDays !== undefined ? { ttlDays: ttlDays as number } : {}),
      ...(rsaKeySizeBytes !== undefined ? { rsaKeySizeBytes: rsaKeySizeBytes as number } : {}),
      ...(orgName !== undefined ? { orgName: orgName as string } : {}),
      ...(ratio !== undefined ? { secretRotationGracePeriodRatio: ratio } : {}),
    },
  };
}

function parseMgmtServerCa(value: unknown, namespace: string): Parsed<MgmtServerCa> {
  const path = 'spec.config.mgmtServerCa';
  if (value === undefined || value === null) return { value: { type: 'generated', options: {} } };
  if (!isRecord(value)) return { problem: `${path}: must be an object` };
  const extra = unknownFields(value, ['generated', 'secretRef'], path);
  if (extra) return { problem: extra };
  const { generated, secretRef } = value;
  if (generated !== undefined && secretRef !== undefined)
    return { problem: `${path}: set one of generated and secretRef, not both` };
  if (secretRef === undefined) {
    const options = parseCertOptions(generated, `${path}.generated`);
    return 'problem' in options ? options : { value: { type: 'generated', options: options.value } };
  }
  if (!isRecord(secretRef))
    return { problem: `${path}.secretRef: must be an object with name (and optionally namespace)` };
  const extraRef = unknownFields(secretRef, ['name', 'namespace'], `${path}.secretRef`);
  if (extraRef) return { problem: extraRef };
  if (typeof secretRef['name'] !== 'string' || secretRef['name'] === '')
    return { problem: `${path}.secretRef.name: is required and must be a non-empty string` };
  const ns = secretRef['namespace'];
  if (ns !== undefined && (typeof ns !== 'string' || ns === ''))
    return { problem: `${path}.secretRef.namespace: must be a non-empty string when set` };
  return {
    value: {
      type: 'secretRef',
      secretRef: { name: secretRef['name'], namespace: (ns as string | undefined) ?? namespace },
    },
  };
}

function parseConfig(config: unknown, namespace: string): Parsed<Omit<RootTrustPolicy, 'name' | 'namespace'>> {
  if (config === undefined || config === null)
    return {
      value: { mgmtServerCa: { type: 'generated', options: {} }, intermediateCertOptions: {}, autoRestartPods: false },
    };
  if (!isRecord(config)) return { problem: 'spec.config: must be an object' };
  if (config['agentCa'] !== undefined)
    return { problem: 'spec.config.agentCa: an agent-side CA (Vault) is not supported; use mgmtServerCa' };
  const extra = unknownFields(config, ['mgmtServerCa', 'intermediateCertOptions', 'autoRestartPods'], 'spec.config');
  if (extra) return { problem: extra };
  const ca = parseMgmtServerCa(config['mgmtServerCa'], namespace);
  if ('problem' in ca) return ca;
  const intermediate = parseCertOptions(config['intermediateCertOptions'], 'spec.config.intermediateCertOptions');
  if ('problem' in intermediate) return intermediate;
  const restart = config['autoRestartPods'];
  if (restart !== undefined && typeof restart !== 'boolean')
    return { problem: 'spec.config.autoRestartPods: must be true or false' };
  return {
    value: { mgmtServerCa: ca.value, intermediateCertOptions: intermediate.value, autoRestartPods: restart === true },
  };
}

/**
 * Parses a RootTrustPolicy object (as the API returns it). Never throws: a problem names the
 * field that is wrong. `spec.applyToMeshes` is accepted as Gloo allows it but not read: one
 * policy applies to every cluster here.
 */
export function parseRootTrustPolicy(obj: unknown): Parsed<RootTrustPolicy> {
  if (!isRecord(obj) || !isRecord(obj['metadata'])) return { problem: 'must be an object with metadata' };
  const { name, namespace } = obj['metadata'];
  if (typeof name !== 'string' || name === '') return { problem: 'metadata.name: is required' };
  if (typeof namespace !== 'string' || namespace === '') return { problem: 'metadata.namespace: is required' };
  const spec = obj['spec'] ?? {};
  if (!isRecord(spec)) return { problem: 'spec: must be an object' };
  const extra = unknownFields(spec, ['applyToMeshes', 'config'], 'spec');
  if (extra) return { problem: extra };
  if (spec['applyToMeshes'] !== undefined && !Array.isArray(spec['applyToMeshes']))
    return { problem: 'spec.applyToMeshes: must be a list' };
  const config = parseConfig(spec['config'], namespace);
  if ('problem' in config) return config;
  return { value: Object.freeze({ name, namespace, ...config.value }) };
}
