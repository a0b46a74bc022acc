/**
 * Validation of output resources against Istio's own CRD schemas, so that an output that
 * Istio (or the Kubernetes API server) would reject or silently prune never leaves the server.
 */
import { readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
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

/** Checks one output resource. */
export interface OutputValidator {
  /** Returns what is wrong with `r` as `path: reason` lines; empty = valid. Does not mutate `r`. */
  validate(r: Resource): string[];
}

export interface IstioValidatorOptions {
  /** The CRD bundle to read; defaults to the copy shipped in this package's `schemas/`. */
  readonly crdFile?: string;
  /**
   * Compile every output kind's schema when the validator is created (default false: on first
   * use of each kind). A server sets it so its first translation after a start does not pay for it.
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

function createAjv(): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: false, verbose: true });
  ajv.addVocabulary(KUBERNETES_KEYWORDS);
  ajv.addFormat('int32', {
    type: 'number',
    validate: (n: number) => Number.isInteger(n) && n >= INT32_MIN && n <= INT32_MAX,
  });
  ajv.addFormat('double', { type: 'number', validate: () => true });
  ajv.addFormat('byte', (s: string) => /^[A-Za-z0-9+/]*={0,2}$/.test(s));
  ajv.addFormat('date-time', (s: string) => !Number.isNaN(Date.parse(s)));
  return ajv;
}

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

class IstioSchemaValidator implements OutputValidator {
  private readonly ajv = createAjv();
  private readonly documents: Map<string, string>;
  private readonly compiled = new Map<string, ValidateFunction>();
  #endpointSchema: ValidateFunction | undefined;
  /** Verdicts on canonical endpoint parts (deep-frozen, so they cannot change). */
  readonly #endpointVerdicts = new WeakMap<object, boolean>();
  /** Verdicts on the endpoint groups of concatenated endpoint lists (see `canonicalConcat`), per group. */
  readonly #groupVerdicts = new WeakMap<object, boolean>();
  /** Parsed spec schemas by kind (the ServiceEntry's is read twice: whole and per endpoint). */
  readonly #specSchemas = new Map<string, Record<string, unknown>>();

  constructor(documents: Map<string, string>) {
    this.documents = documents;
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
      valid = this.#endpointValidator()(endpoint) && !hasPortRangeProblems(endpoint, 'endpoints');
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
    const validateSpec = this.specValidator(id);
    if (!validateSpec(spec)) {
      for (const p of problemsFromAjv(validateSpec.errors, 'spec')) problems.push(`${p.path}: ${p.message}`);
    }
    if (hasPortRangeProblems(spec))
      for (const p of checkPortRanges(spec, 'spec')) problems.push(`${p.path}: ${p.message}`);
    return problems;
  }

  /** Compiles a kind's spec schema on first use and keeps it. */
  private specValidator(id: string): ValidateFunction {
    const cached = this.compiled.get(id);
    if (cached) return cached;
    const fn = this.ajv.compile(closeObjectSchemas(this.specSchema(id)) as Record<string, unknown>);
    this.compiled.set(id, fn);
    return fn;
  }

  /** The v1 spec schema of a kind's CRD (its `properties` by field name), parsed once per kind. */
  private specSchema(id: string): Record<string, unknown> {
    let schema = this.#specSchemas.get(id);
    if (!schema) {
      schema = this.#parseSpecSchema(id);
      this.#specSchemas.set(id, schema);
    }
    return schema;
  }

  /**
   * Compiles every output kind's schema now instead of on first use: a server can pay for it at
   * start, while it waits for its inputs, instead of in its first translation.
   */
  precompile(): void {
    for (const id of CRD_BY_KIND.keys()) this.specValidator(id);
    this.#endpointValidator();
  }

  #parseSpecSchema(id: string): Record<string, unknown> {
    const crdName = CRD_BY_KIND.get(id) as string;
    const doc = this.documents.get(crdName);
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

  /** The schema of one ServiceEntry endpoint, compiled on first use. */
  #endpointValidator(): ValidateFunction {
    if (!this.#endpointSchema) {
      const fields = this.specSchema(SERVICE_ENTRY_ID)['properties'];
      const endpoints = isRecord(fields) ? fields['endpoints'] : undefined;
      const items = isRecord(endpoints) ? endpoints['items'] : undefined;
      if (!isRecord(items))
        throw new MeshrelayError('MESHRELAY_ERR_INVALID_CONFIG', 'the Istio ServiceEntry CRD has no endpoint schema');
      this.#endpointSchema = this.ajv.compile(closeObjectSchemas(items) as Record<string, unknown>);
    }
    return this.#endpointSchema;
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
 * Builds a validator for the Istio output kinds. Reads the CRD file once, here; schemas are
 * compiled lazily per kind and cached. Throws MESHRELAY_ERR_INVALID_CONFIG if the file cannot
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
  const validator = new IstioSchemaValidator(indexCrdDocuments(text));
  if (options.precompile === true) validator.precompile();
  return validator;
}
