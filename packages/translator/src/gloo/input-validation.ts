/**
 * Validation of input resources before they are admitted into a snapshot or a translation.
 * A rejected resource is reported with the exact field path; its neighbours are unaffected.
 */
import { isIP } from 'node:net';
import {
  DNS_LABEL,
  DNS_SUBDOMAIN,
  KINDS,
  MESH_CONFIG_NAMESPACE,
  findInputKind,
  isMeshConfigMap,
  isRecord,
  resourceKey,
  type Resource,
  type ResourceKey,
} from '@meshrelay/api';
import { CONFIG_MAP, ENDPOINTS, ENDPOINT_SLICE, NODE, POD, SERVICE } from './schemas/core.ts';
import type { JsonSchema } from './schemas/gloo-common.ts';
import { VIRTUAL_DESTINATION_SPEC, ROUTE_TABLE_SPEC } from './schemas/networking.ts';
import {
  ACCESS_POLICY_SPEC,
  FAILOVER_POLICY_SPEC,
  LOAD_BALANCER_POLICY_SPEC,
  OUTLIER_DETECTION_POLICY_SPEC,
  RETRY_TIMEOUT_POLICY_SPEC,
} from './schemas/policies.ts';
import { EXTERNAL_ENDPOINT_SPEC, EXTERNAL_SERVICE_SPEC, VIRTUAL_GATEWAY_SPEC } from './schemas/external.ts';
import {
  CORS_POLICY_SPEC,
  FAULT_INJECTION_POLICY_SPEC,
  HEADER_MANIPULATION_POLICY_SPEC,
  MIRROR_POLICY_SPEC,
} from './schemas/route-policies.ts';
import { WORKSPACE_SETTINGS_SPEC, WORKSPACE_SPEC } from './schemas/workspace.ts';
import type { ValidateFunction } from 'ajv';
import { joinPath, problemsFromAjv, type InputProblem } from './schema-errors.ts';
import { unimplementedFields, type UnimplementedField } from './unimplemented-fields.ts';
import { quickCheckOf } from './input-fast-checks.ts';
import { digestOf, schemaValidators, type SchemaSet } from '../schema-validators.ts';
import * as generatedInputValidators from '../gen/input-validators.js';

export type { InputProblem } from './schema-errors.ts';

/** What a schema is checked against: the spec of a Gloo kind, or the whole object of a core kind. */
interface KindSchema {
  readonly target: 'spec' | 'object';
  readonly schema: JsonSchema;
}

const KIND_SCHEMAS = new Map<string, KindSchema>([
  [kindId(KINDS.Service), { target: 'object', schema: SERVICE }],
  [kindId(KINDS.Endpoints), { target: 'object', schema: ENDPOINTS }],
  [kindId(KINDS.EndpointSlice), { target: 'object', schema: ENDPOINT_SLICE }],
  [kindId(KINDS.Pod), { target: 'object', schema: POD }],
  [kindId(KINDS.Node), { target: 'object', schema: NODE }],
  [kindId(KINDS.ConfigMap), { target: 'object', schema: CONFIG_MAP }],
  [kindId(KINDS.VirtualDestination), { target: 'spec', schema: VIRTUAL_DESTINATION_SPEC }],
  [kindId(KINDS.RouteTable), { target: 'spec', schema: ROUTE_TABLE_SPEC }],
  [kindId(KINDS.AccessPolicy), { target: 'spec', schema: ACCESS_POLICY_SPEC }],
  [kindId(KINDS.FailoverPolicy), { target: 'spec', schema: FAILOVER_POLICY_SPEC }],
  [kindId(KINDS.OutlierDetectionPolicy), { target: 'spec', schema: OUTLIER_DETECTION_POLICY_SPEC }],
  [kindId(KINDS.RetryTimeoutPolicy), { target: 'spec', schema: RETRY_TIMEOUT_POLICY_SPEC }],
  [kindId(KINDS.FaultInjectionPolicy), { target: 'spec', schema: FAULT_INJECTION_POLICY_SPEC }],
  [kindId(KINDS.HeaderManipulationPolicy), { target: 'spec', schema: HEADER_MANIPULATION_POLICY_SPEC }],
  [kindId(KINDS.LoadBalancerPolicy), { target: 'spec', schema: LOAD_BALANCER_POLICY_SPEC }],
  [kindId(KINDS.CORSPolicy), { target: 'spec', schema: CORS_POLICY_SPEC }],
  [kindId(KINDS.MirrorPolicy), { target: 'spec', schema: MIRROR_POLICY_SPEC }],
  [kindId(KINDS.ExternalService), { target: 'spec', schema: EXTERNAL_SERVICE_SPEC }],
  [kindId(KINDS.ExternalEndpoint), { target: 'spec', schema: EXTERNAL_ENDPOINT_SPEC }],
  [kindId(KINDS.VirtualGateway), { target: 'spec', schema: VIRTUAL_GATEWAY_SPEC }],
  [kindId(KINDS.Workspace), { target: 'spec', schema: WORKSPACE_SPEC }],
  [kindId(KINDS.WorkspaceSettings), { target: 'spec', schema: WORKSPACE_SETTINGS_SPEC }],
]);

function kindId(ref: { apiVersion: string; kind: string }): string {
  return `${ref.apiVersion}/${ref.kind}`;
}

/** The input kinds' schemas as a set compiled ahead of time (see schema-validators.ts). */
export const INPUT_SCHEMA_SET: SchemaSet = {
  file: 'input-validators.js',
  generated: generatedInputValidators,
  source: 'packages/translator/src/gloo/schemas',
  digest: () => digestOf([JSON.stringify([...KIND_SCHEMAS])]),
  names: [...KIND_SCHEMAS.keys()],
  schema: (name) => (KIND_SCHEMAS.get(name) as KindSchema).schema,
  formats: { ip: (value: string) => isIP(value) !== 0 },
  vocabulary: [],
};

/** The input kinds' validators, made on first use and kept for the process (they hold no input). */
let validators: ((id: string) => ValidateFunction) | undefined;

function validatorFor(id: string): ValidateFunction {
  return (validators ??= schemaValidators(INPUT_SCHEMA_SET))(id);
}

function checkStringMap(value: unknown, path: string, problems: InputProblem[]): void {
  if (value === undefined) return;
  if (!isRecord(value)) {
    problems.push({ path, message: 'must be a map of strings' });
    return;
  }
  for (const key of Object.keys(value)) {
    if (typeof value[key] !== 'string') problems.push({ path: joinPath(path, key), message: 'must be a string' });
  }
}

function checkMetadata(metadata: unknown, namespaced: boolean, problems: InputProblem[]): void {
  if (!isRecord(metadata)) {
    problems.push({ path: 'metadata', message: 'is required and must be an object' });
    return;
  }
  const name = metadata['name'];
  if (typeof name !== 'string' || !DNS_SUBDOMAIN.test(name)) {
    problems.push({
      path: 'metadata.name',
      message: 'must be a DNS-1123 subdomain (lower case alphanumerics, "-" and ".", at most 253 characters)',
    });
  }
  const namespace = metadata['namespace'];
  if (namespaced) {
    if (typeof namespace !== 'string' || namespace === '')
      problems.push({ path: 'metadata.namespace', message: 'is required for a namespaced kind' });
    else if (!DNS_LABEL.test(namespace))
      problems.push({ path: 'metadata.namespace', message: 'must be a DNS-1123 label' });
  } else if (namespace !== undefined && namespace !== '') {
    problems.push({ path: 'metadata.namespace', message: 'must not be set for a cluster-scoped kind' });
  }
  checkStringMap(metadata['labels'], 'metadata.labels', problems);
  checkStringMap(metadata['annotations'], 'metadata.annotations', problems);
}

/**
 * Checks one input resource: a known input kind, a valid name (and namespace for namespaced
 * kinds), and a body that matches the kind's schema. Returns every problem found (empty =
 * valid). Never throws, whatever the value.
 */
export function validateInputResource(r: Resource): InputProblem[] {
  const value: unknown = r;
  if (!isRecord(value)) return [{ path: '', message: 'must be an object' }];
  const apiVersion = value['apiVersion'];
  const kind = value['kind'];
  if (typeof apiVersion !== 'string' || apiVersion === '')
    return [{ path: 'apiVersion', message: 'is required and must be a string' }];
  if (typeof kind !== 'string' || kind === '') return [{ path: 'kind', message: 'is required and must be a string' }];
  const ref = findInputKind(apiVersion, kind);
  if (!ref) return [{ path: 'kind', message: `${kind} (${apiVersion}) is not a supported input kind` }];

  const problems: InputProblem[] = [];
  checkMetadata(value['metadata'], ref.namespaced, problems);
  if (ref === KINDS.ConfigMap && problems.length === 0 && !isMeshConfigMap(r)) {
    return [
      {
        path: 'metadata.name',
        message: `only Istio's mesh config (istio or istio-<revision> in ${MESH_CONFIG_NAMESPACE}) is an input ConfigMap`,
      },
    ];
  }
  const entry = KIND_SCHEMAS.get(kindId(ref));
  if (!entry) return problems;
  // Most of a large input is Pods: a quick sound check spares them the schema (see input-fast-checks.ts).
  if (problems.length === 0 && quickCheckOf(ref)?.(value) === true) return problems;
  if (entry.target === 'spec') {
    if (!isRecord(value['spec'])) {
      problems.push({ path: 'spec', message: 'is required and must be an object' });
      return problems;
    }
    const validate = validatorFor(kindId(ref));
    if (!validate(value['spec'])) problems.push(...problemsFromAjv(validate.errors, 'spec'));
  } else {
    const validate = validatorFor(kindId(ref));
    if (!validate(value)) problems.push(...problemsFromAjv(validate.errors, ''));
  }
  return problems;
}

/** The unimplemented fields a valid Gloo resource sets (empty for other kinds). */
export function unimplementedFieldsOf(r: Resource): UnimplementedField[] {
  const ref = findInputKind(r.apiVersion, r.kind);
  const entry = ref ? KIND_SCHEMAS.get(kindId(ref)) : undefined;
  return entry?.target === 'spec' ? unimplementedFields(r.spec, entry.schema) : [];
}

/** A resource of a Gloo API group (`*.solo.io`), supported or not: it gets a status. */
export function isGlooResource(r: { readonly apiVersion: string }): boolean {
  return /^[a-z0-9.-]+\.solo\.io\/[a-z0-9]+$/.test(r.apiVersion);
}

export interface InputValidationResult {
  /**
   * What an input snapshot keeps: every valid resource, and every Gloo resource whose
   * metadata is valid even when its kind or spec is not (translation reports it INVALID with
   * the fields named, so a broken resource is visible and a broken AccessPolicy fails closed).
   */
  readonly valid: Resource[];
  /** Resources left out of the snapshot, with their problems. */
  readonly rejected: { readonly key: ResourceKey; readonly problems: InputProblem[] }[];
  /** The resources among `valid` kept despite problems (Gloo resources that translation reports INVALID). */
  readonly carried: Resource[];
}

/** Whether every resource judged passed with no problem (none rejected, none carried despite problems). */
export function judgedClean(result: InputValidationResult): boolean {
  return result.rejected.length === 0 && result.carried.length === 0;
}

/** Whether a resource with these problems is still carried (see InputValidationResult.valid). */
export function isCarriedDespite(r: Resource, problems: readonly InputProblem[]): boolean {
  if (!isGlooResource(r)) return false;
  const metadata: InputProblem[] = [];
  checkMetadata((r as { metadata?: unknown }).metadata, typeof r.metadata?.namespace === 'string', metadata);
  return (
    metadata.length === 0 &&
    problems.every(
      (p) => p.path === 'kind' || p.path === 'spec' || p.path.startsWith('spec.') || p.path.startsWith('spec['),
    )
  );
}

/** Splits resources into the kept ones (in their given order) and the rejected ones with their problems. */
export function validateInputResources(resources: readonly Resource[]): InputValidationResult {
  const valid: Resource[] = [];
  const rejected: { key: ResourceKey; problems: InputProblem[] }[] = [];
  const carried: Resource[] = [];
  for (const r of resources) {
    const problems = validateInputResource(r);
    if (problems.length === 0) valid.push(r);
    else if (isCarriedDespite(r, problems)) {
      valid.push(r);
      carried.push(r);
    } else rejected.push({ key: safeKey(r), problems });
  }
  return { valid, rejected, carried };
}

/**
 * What one owner (a server) found when it judged whole input lists with validateInputResource:
 * inputs are judged once, where they enter (the intake of an agent's snapshot, the load of a
 * stored one), and translation given these judgements admits a list recorded clean without
 * judging its resources again. Only frozen lists are recorded (an input snapshot's: they cannot
 * change after they were judged); a record names one list object, never an equal one.
 */
export class InputJudgements {
  readonly #clean = new WeakSet<readonly Resource[]>();
  readonly #withProblems = new WeakSet<readonly Resource[]>();

  /**
   * Records the verdict on `resources`: `clean` when every resource passed validateInputResource
   * with no problem (the caller judged them all, or kept resources of a list recorded clean).
   */
  record(resources: readonly Resource[], clean: boolean): void {
    if (!Object.isFrozen(resources)) return;
    if (clean) this.#clean.add(resources);
    else this.#withProblems.add(resources);
  }

  /** Whether `resources` was recorded clean: validateInputResource finds no problem with any of them. */
  isClean(resources: readonly Resource[]): boolean {
    return this.#clean.has(resources);
  }

  /** Whether `resources` was recorded at all, clean or not. */
  isJudged(resources: readonly Resource[]): boolean {
    return this.#clean.has(resources) || this.#withProblems.has(resources);
  }
}

/** resourceKey() for a value that may be malformed. */
function safeKey(r: Resource): ResourceKey {
  const value: unknown = r;
  if (isRecord(value) && isRecord(value['metadata'])) {
    const meta = value['metadata'];
    return resourceKey({
      apiVersion: String(value['apiVersion'] ?? ''),
      kind: String(value['kind'] ?? ''),
      metadata: {
        name: String(meta['name'] ?? ''),
        namespace: typeof meta['namespace'] === 'string' ? meta['namespace'] : undefined,
      },
    } as Resource);
  }
  const record = isRecord(value) ? value : {};
  return {
    apiVersion: String(record['apiVersion'] ?? ''),
    kind: String(record['kind'] ?? ''),
    namespace: '',
    name: '',
  };
}
