/**
 * Validation of output resources against Istio's own CRD schemas, so that an output that
 * Istio (or the Kubernetes API server) would reject or silently prune never leaves the server.
 */
import { readFileSync } from 'node:fs';
import type { Format, ValidateFunction } from 'ajv';
import {
  DNS_LABEL,
  DNS_SUBDOMAIN,
  KINDS,
  MeshrelayError,
  concatParts,
  isCanonicalPart,
  isRecord,
  type Resource,
} from '@meshrelay/api';
import { v1VersionOf } from './crd-versions.ts';
import { problemsFromAjv } from '../gloo/schema-errors.ts';
import { checkPortRanges, hasPortRangeProblems } from './port-ranges.ts';
import { digestOf, schemaValidators, type SchemaSet } from '../schema-validators.ts';
import * as generatedIstioValidators from '../gen/istio-spec-validators.js';

/** Checks one output resource. */
export interface OutputValidator {
  /** Returns what is wrong with `r` as `path: reason` lines; empty = valid. Does not mutate `r`. */
  validate(r: Resource): string[];
}

export interface IstioValidatorOptions {
  /** The CRD bundle to read; defaults to the copy shipped in this package's `schemas/`. */
  readonly crdFile?: string;
  /**
   * Ready every output kind's validator when the validator is created (default false: on first
   * use of each kind). A server sets it so its first translation after a start does not pay for it
   * (and a CRD file that lacks a kind fails at start), where no generated code applies.
   */
  readonly precompile?: boolean;
}

const DEFAULT_CRD_FILE = new URL('../../schemas/istio-crd-all.gen.yaml', import.meta.url);

const SERVICE_ENTRY_ID = `${KINDS.ServiceEntry.apiVersion}/${KINDS.ServiceEntry.kind}`;
/** Stands in for each endpoint in a ServiceEntry's skeleton (the endpoint schema requires no field). */
const EMPTY_ENDPOINT = Object.freeze({});

/** The output kinds and the CRD (by metadata.name) whose v1 schema describes their spec. */
const CRD_BY_KIND = new Map<string, string>([
  [`${KINDS.ServiceEntry.apiVersion}/${KINDS.ServiceEntry.kind}`, 'serviceentries.networking.istio.io'],
  [`${KINDS.DestinationRule.apiVersion}/${KINDS.DestinationRule.kind}`, 'destinationrules.networking.istio.io'],
  [`${KINDS.VirtualService.apiVersion}/${KINDS.VirtualService.kind}`, 'virtualservices.networking.istio.io'],
  [
    `${KINDS.AuthorizationPolicy.apiVersion}/${KINDS.AuthorizationPolicy.kind}`,
    'authorizationpolicies.security.istio.io',
  ],
  [`${KINDS.PeerAuthentication.apiVersion}/${KINDS.PeerAuthentication.kind}`, 'peerauthentications.security.istio.io'],
  [`${KINDS.Gateway.apiVersion}/${KINDS.Gateway.kind}`, 'gateways.networking.istio.io'],
  [`${KINDS.WorkloadEntry.apiVersion}/${KINDS.WorkloadEntry.kind}`, 'workloadentries.networking.istio.io'],
]);

const KUBERNETES_KEYWORDS = [
  'x-kubernetes-validations',
  'x-kubernetes-int-or-string',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-embedded-resource',
];

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

const FORMATS: Readonly<Record<string, Format>> = {
  int32: { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= INT32_MIN && n <= INT32_MAX },
  double: { type: 'number', validate: () => true },
  byte: (s: string) => /^[A-Za-z0-9+/]*={0,2}$/.test(s),
  'date-time': (s: string) => !Number.isNaN(Date.parse(s)),
};

/** The name of the one-endpoint schema in the set (beside the output kinds' ids). */
const ENDPOINT = 'ServiceEntry endpoint';

/**
 * Returns a copy of an OpenAPI schema in which every object schema that lists `properties`
 * and neither `additionalProperties` nor `x-kubernetes-preserve-unknown-fields` rejects
 * unknown fields (the API server would prune them; a pruned field is a lost setting).
 */
export function closeObjectSchemas(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closeObjectSchemas);
  if (!isRecord(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    // `properties` maps names to schemas; `enum`/`required` hold data, not schemas.
    if (key === 'properties' && isRecord(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, closeObjectSchemas(sub)]));
    } else if (key === 'enum' || key === 'required' || key === 'x-kubernetes-validations') {
      out[key] = value;
    } else {
      out[key] = closeObjectSchemas(value);
    }
  }
  if (
    isRecord(schema['properties']) &&
    schema['additionalProperties'] === undefined &&
    schema['x-kubernetes-preserve-unknown-fields'] !== true
  ) {
    out['additionalProperties'] = false;
  }
  return out;
}

/** Splits the multi-document CRD file into documents keyed by CRD name, without parsing them yet. */
function indexCrdDocuments(text: string): Map<string, string> {
  const docs = new Map<string, string>();
  for (const doc of text.split(/^---[ \t]*$/m)) {
    const match = /^ {2}name: ([a-z0-9.-]+)$/m.exec(doc);
    if (match?.[1]) docs.set(match[1], doc);
  }
  return docs;
}

/** The v1 spec schema of a kind's CRD (its `properties` by field name). */
function parseSpecSchema(documents: ReadonlyMap<string, string>, id: string): Record<string, unknown> {
  const crdName = CRD_BY_KIND.get(id) as string;
  const doc = documents.get(crdName);
  if (doc === undefined)
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', `the Istio CRD file has no ${crdName}`);
  const v1 = v1VersionOf(doc);
  const specSchema =
    isRecord(v1) && isRecord(v1['schema']) && isRecord(v1['schema']['openAPIV3Schema'])
      ? v1['schema']['openAPIV3Schema']
      : undefined;
  const properties = specSchema && isRecord(specSchema['properties']) ? specSchema['properties']['spec'] : undefined;
  if (!isRecord(properties))
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', `the Istio CRD ${crdName} has no v1 spec schema`);
  return properties;
}

/** The schema of one endpoint in a ServiceEntry's spec schema. */
function endpointSchema(serviceEntrySpec: Record<string, unknown>): Record<string, unknown> {
  const fields = serviceEntrySpec['properties'];
  const endpoints = isRecord(fields) ? fields['endpoints'] : undefined;
  const items = isRecord(endpoints) ? endpoints['items'] : undefined;
  if (!isRecord(items))
    throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', 'the Istio ServiceEntry CRD has no endpoint schema');
  return items;
}

/**
 * The output kinds' spec schemas (and one ServiceEntry endpoint's) in the CRD bundle `text`, as a
 * set compiled ahead of time for the bundle this package ships (see schema-validators.ts). Each
 * schema is parsed from the text only when compiled at run time.
 */
export function istioSchemaSet(text: string): SchemaSet {
  const documents = indexCrdDocuments(text);
  const parsed = new Map<string, Record<string, unknown>>();
  const specSchema = (id: string): Record<string, unknown> => {
    let schema = parsed.get(id);
    if (!schema) {
      schema = parseSpecSchema(documents, id);
      parsed.set(id, schema);
    }
    return schema;
  };
  let digest: string | undefined;
  return {
    file: 'istio-spec-validators.js',
    generated: generatedIstioValidators,
    source: 'packages/translator/schemas/istio-crd-all.gen.yaml',
    digest: () => (digest ??= digestOf([text, ...[closeObjectSchemas, parseSpecSchema, endpointSchema].map(String)])),
    names: [...CRD_BY_KIND.keys(), ENDPOINT],
    schema: (name) =>
      closeObjectSchemas(name === ENDPOINT ? endpointSchema(specSchema(SERVICE_ENTRY_ID)) : specSchema(name)) as object,
    formats: FORMATS,
    vocabulary: KUBERNETES_KEYWORDS,
  };
}

class IstioSchemaValidator implements OutputValidator {
  /** Each output kind's spec validator (and the endpoint's), by name in the set. */
  readonly #validator: (name: string) => ValidateFunction;
  readonly #names: readonly string[];
  /** Verdicts on canonical endpoint parts (deep-frozen, so they cannot change). */
  readonly #endpointVerdicts = new WeakMap<object, boolean>();
  /** Verdicts on the endpoint groups of concatenated endpoint lists (see `canonicalConcat`), per group. */
  readonly #groupVerdicts = new WeakMap<object, boolean>();

  constructor(set: SchemaSet) {
    this.#validator = schemaValidators(set);
    this.#names = set.names;
  }

  validate(r: Resource): string[] {
    return this.#validSharedEndpoints(r) ? [] : this.#validate(r);
  }

  /**
   * A ServiceEntry whose endpoints are shared canonical parts (the same endpoint objects in the
   * ServiceEntries of many consumers) is valid when its skeleton (each endpoint replaced by an
   * empty one, so the list keeps its length) is valid and each endpoint is valid against the
   * schema of one endpoint, checked once per endpoint object. With any problem the full
   * validation runs, so what is reported is exactly what it reports.
   */
  #validSharedEndpoints(r: Resource): boolean {
    if (r.apiVersion !== KINDS.ServiceEntry.apiVersion || r.kind !== KINDS.ServiceEntry.kind || !isRecord(r.spec))
      return false;
    const endpoints = r.spec['endpoints'];
    if (!Array.isArray(endpoints) || endpoints.length === 0) return false;
    // A concatenation of shared groups is checked group by group, each group once.
    const groups = concatParts(endpoints as readonly object[]);
    if (!groups && !endpoints.every(isCanonicalPart)) return false;
    if (this.#validate({ ...r, spec: { ...r.spec, endpoints: endpoints.map(() => EMPTY_ENDPOINT) } }).length > 0)
      return false;
    return groups ? groups.every((g) => this.#groupValid(g)) : endpoints.every((e: object) => this.#endpointValid(e));
  }

  #groupValid(group: readonly object[]): boolean {
    let valid = this.#groupVerdicts.get(group);
    if (valid === undefined) {
      // A group is a canonical array (canonicalConcat refuses anything else): its endpoints are deep-frozen.
      valid = group.every((e) => this.#endpointValid(e));
      this.#groupVerdicts.set(group, valid);
    }
    return valid;
  }

  #endpointValid(endpoint: object): boolean {
    let valid = this.#endpointVerdicts.get(endpoint);
    if (valid === undefined) {
      valid = this.#validator(ENDPOINT)(endpoint) && !hasPortRangeProblems(endpoint, 'endpoints');
      this.#endpointVerdicts.set(endpoint, valid);
    }
    return valid;
  }

  #validate(r: Resource): string[] {
    const value: unknown = r;
    if (!isRecord(value)) return [': must be an object'];
    const id = `${String(value['apiVersion'])}/${String(value['kind'])}`;
    if (!CRD_BY_KIND.has(id)) return [`kind: ${id} is not a supported output kind`];
    const problems: string[] = [];
    for (const key of Object.keys(value)) {
      if (!['apiVersion', 'kind', 'metadata', 'spec'].includes(key)) problems.push(`${key}: unknown field`);
    }
    problems.push(...checkMetadata(value['metadata']));
    const spec = value['spec'];
    if (!isRecord(spec)) return [...problems, 'spec: is required and must be an object'];
    const validateSpec = this.#validator(id);
    if (!validateSpec(spec)) {
      for (const p of problemsFromAjv(validateSpec.errors, 'spec')) problems.push(`${p.path}: ${p.message}`);
    }
    if (hasPortRangeProblems(spec))
      for (const p of checkPortRanges(spec, 'spec')) problems.push(`${p.path}: ${p.message}`);
    return problems;
  }

  /**
   * Readies every output kind's validator now instead of on first use: a server can pay for it at
   * start, while it waits for its inputs, instead of in its first translation.
   */
  precompile(): void {
    for (const name of this.#names) this.#validator(name);
  }
}

function checkMetadata(metadata: unknown): string[] {
  if (!isRecord(metadata)) return ['metadata: is required and must be an object'];
  const problems: string[] = [];
  const { name, namespace, labels } = metadata;
  if (typeof name !== 'string' || !DNS_SUBDOMAIN.test(name))
    problems.push('metadata.name: must be a DNS-1123 subdomain');
  if (typeof namespace !== 'string' || !DNS_LABEL.test(namespace))
    problems.push('metadata.namespace: must be a DNS-1123 label');
  if (labels !== undefined && (!isRecord(labels) || Object.values(labels).some((v) => typeof v !== 'string'))) {
    problems.push('metadata.labels: must be a map of strings');
  }
  for (const key of Object.keys(metadata)) {
    if (!['name', 'namespace', 'labels', 'annotations'].includes(key)) problems.push(`metadata.${key}: unknown field`);
  }
  return problems;
}

/**
 * Builds a validator for the Istio output kinds. Reads the CRD file once, here, and takes the
 * validators generated ahead of time when they were made from this file; otherwise each kind's
 * schema is compiled at first use and kept. Throws MESHRELAY_ERR_INVALID_CONFIG if the file cannot
 * be read. The returned validator does no I/O.
 */
export function createIstioValidator(options: IstioValidatorOptions = {}): OutputValidator {
  let text: string;
  try {
    text = readFileSync(options.crdFile ?? DEFAULT_CRD_FILE, 'utf8');
  } catch (err) {
    throw new MeshrelayError(
      'MESHRELAY_ERR_INVALID_CONFIG',
      `cannot read the Istio CRD file: ${(err as Error).message}`,
      { cause: err },
    );
  }
  const validator = new IstioSchemaValidator(istioSchemaSet(text));
  if (options.precompile === true) validator.precompile();
  return validator;
}
