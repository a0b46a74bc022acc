/**
 * Schemas of networking.gloo.solo.io/v2 ExternalService, ExternalEndpoint and VirtualGateway
 * specs, following solo-apis gloo-mesh-v2.6.x.
 */
import {
  BOOLEAN,
  OBJECT_REFERENCE,
  OBJECT_SELECTOR,
  PORT_NUMBER,
  PORT_SELECTOR,
  STRING,
  STRING_LIST,
  STRING_MAP,
  WORKLOAD_SELECTOR,
  closedObject,
  listOf,
  unimplemented,
  unimplementedSecurity,
  type JsonSchema,
} from './gloo-common.ts';
import { HOST } from './networking.ts';

const PROTOCOL: JsonSchema = { enum: ['HTTP', 'HTTPS', 'GRPC', 'HTTP2', 'MONGO', 'TCP', 'TLS'] };

/** ExternalServiceSpec.Port.TlsConfig */
const CLIENT_TLS = closedObject({
  sni: STRING,
  mode: { enum: ['SIMPLE', 'DISABLE', 'MUTUAL', 'ISTIO_MUTUAL'] },
  clientCertificate: STRING,
  privateKey: STRING,
  caCertificates: STRING,
  credentialName: STRING,
  insecureSkipVerify: BOOLEAN,
});

const EXTERNAL_SERVICE_PORT = closedObject(
  {
    number: PORT_NUMBER,
    targetPort: PORT_SELECTOR,
    name: { type: 'string', minLength: 1 },
    protocol: PROTOCOL,
    clientsideTls: CLIENT_TLS,
    egressGatewayRoutes: unimplemented(
      closedObject({ portMatch: PORT_NUMBER, virtualGatewayRefs: listOf(OBJECT_REFERENCE) }),
    ),
  },
  { required: ['number', 'protocol'] },
);

export const EXTERNAL_SERVICE_SPEC = closedObject(
  {
    hosts: listOf(HOST, { minItems: 1 }),
    addresses: STRING_LIST,
    ports: listOf(EXTERNAL_SERVICE_PORT, { minItems: 1 }),
    selector: STRING_MAP,
    subjectAltNames: STRING_LIST,
  },
  { required: ['hosts', 'ports'] },
);

export const EXTERNAL_ENDPOINT_SPEC = closedObject(
  {
    address: { type: 'string', minLength: 1 },
    ports: listOf(
      closedObject({ name: { type: 'string', minLength: 1 }, number: PORT_NUMBER }, { required: ['name', 'number'] }),
    ),
    locality: closedObject({ region: STRING, zone: STRING, subZone: STRING }),
  },
  { required: ['address'] },
);

/** networking.gloo.solo.io.TLSConfig (server side, on a VirtualGateway listener). */
const SERVER_TLS = closedObject({
  secretName: STRING,
  files: unimplemented(closedObject({ serverCert: STRING, privateKey: STRING, caCerts: STRING })),
  verifySubjectAltName: STRING_LIST,
  parameters: closedObject({
    minimumProtocolVersion: { enum: ['TLS_AUTO', 'TLSv1_0', 'TLSv1_1', 'TLSv1_2', 'TLSv1_3'] },
    maximumProtocolVersion: { enum: ['TLS_AUTO', 'TLSv1_0', 'TLSv1_1', 'TLSv1_2', 'TLSv1_3'] },
    cipherSuites: STRING_LIST,
  }),
  mode: { enum: ['PASSTHROUGH', 'SIMPLE', 'MUTUAL', 'AUTO_PASSTHROUGH', 'ISTIO_MUTUAL'] },
});

const LISTENER = closedObject(
  {
    port: PORT_SELECTOR,
    tls: SERVER_TLS,
    httpsRedirect: BOOLEAN,
    http: closedObject({}),
    tcp: closedObject({}),
    // Which route tables may attach: ignoring it would let any route table bind to the gateway.
    allowedRouteTables: unimplementedSecurity(listOf({ type: 'object' })),
    exposedExternalServices: unimplemented(listOf(closedObject({ host: STRING, selector: OBJECT_SELECTOR }))),
    appProtocol: STRING,
  },
  { required: ['port'] },
);

export const VIRTUAL_GATEWAY_SPEC = closedObject(
  {
    workloads: listOf(WORKLOAD_SELECTOR, { minItems: 1 }),
    listeners: listOf(LISTENER),
  },
  { required: ['workloads'] },
);
