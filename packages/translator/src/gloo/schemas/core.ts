/**
 * Schemas of the discovered Kubernetes kinds (Service, Endpoints, EndpointSlice, Pod, Node).
 * Only the fields the translator reads are typed; everything else is left open because
 * discovery providers pass the rest of the object through.
 */
import { BOOLEAN, PORT_NUMBER, STRING, STRING_MAP, listOf, type JsonSchema } from './gloo-common.ts';

function openObject(properties: Record<string, JsonSchema>, extra: JsonSchema = {}): JsonSchema {
  return { type: 'object', properties, ...extra };
}

/** Validated with the `ip` format, registered by the input validator. */
const IP: JsonSchema = { type: 'string', format: 'ip' };
/** An IntOrString port: a number in range or a non-empty name. */
const TARGET_PORT: JsonSchema = {
  type: ['integer', 'string'],
  if: { type: 'integer' },
  then: PORT_NUMBER,
  else: { minLength: 1 },
};
const OBJECT_REF = openObject({ kind: STRING, name: STRING, namespace: STRING });

export const SERVICE = openObject({
  spec: openObject({
    ports: listOf(
      openObject(
        { name: STRING, port: PORT_NUMBER, targetPort: TARGET_PORT, protocol: STRING },
        { required: ['port'] },
      ),
    ),
    selector: STRING_MAP,
    type: STRING,
    externalIPs: listOf(IP),
  }),
  status: openObject({
    loadBalancer: openObject({ ingress: listOf(openObject({ ip: IP, hostname: STRING })) }),
  }),
});

const ENDPOINT_ADDRESS = openObject({ ip: IP, nodeName: STRING, targetRef: OBJECT_REF }, { required: ['ip'] });
const ENDPOINT_PORT = openObject({ name: STRING, port: PORT_NUMBER, protocol: STRING }, { required: ['port'] });

export const ENDPOINTS = openObject({
  subsets: listOf(
    openObject({
      addresses: listOf(ENDPOINT_ADDRESS),
      notReadyAddresses: listOf(ENDPOINT_ADDRESS),
      ports: listOf(ENDPOINT_PORT),
    }),
  ),
});

export const ENDPOINT_SLICE = openObject({
  addressType: { enum: ['IPv4', 'IPv6', 'FQDN'] },
  endpoints: listOf(
    openObject(
      {
        addresses: listOf(STRING, { minItems: 1 }),
        conditions: openObject({ ready: BOOLEAN, serving: BOOLEAN, terminating: BOOLEAN }),
        nodeName: STRING,
        zone: STRING,
        targetRef: OBJECT_REF,
      },
      { required: ['addresses'] },
    ),
  ),
  ports: listOf(openObject({ name: STRING, port: PORT_NUMBER, protocol: STRING })),
});

export const POD = openObject({
  spec: openObject({ serviceAccountName: STRING, nodeName: STRING }),
  status: openObject({ phase: STRING, podIP: IP, podIPs: listOf(openObject({ ip: IP }, { required: ['ip'] })) }),
});

/** Node labels are checked by the metadata checks; nothing else is read. */
export const NODE = openObject({});

/** Istio's mesh config ConfigMap: `data.mesh` is the MeshConfig YAML (only trustDomain is read). */
export const CONFIG_MAP = openObject({ data: { type: 'object', additionalProperties: STRING } });
