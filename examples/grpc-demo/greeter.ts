/**
 * The demo's one gRPC method, `/meshrelay.demo.Greeter/Hello`: the request is empty, the answer
 * names the cluster and address of the server that took the call. A JSON codec instead of a
 * .proto keeps the demo free of generated code; xDS routes by service path and headers only.
 */
import type * as grpc from '@grpc/grpc-js';

export const HELLO_PATH = '/meshrelay.demo.Greeter/Hello';

export interface Greeting {
  readonly cluster: string;
  readonly address: string;
}

const json = {
  serialize: (value: unknown): Buffer => Buffer.from(JSON.stringify(value ?? {})),
  deserialize: (bytes: Buffer): unknown => (bytes.length === 0 ? {} : JSON.parse(bytes.toString('utf8'))),
};

export const GREETER_SERVICE: grpc.ServiceDefinition = {
  Hello: {
    path: HELLO_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: json.serialize,
    requestDeserialize: json.deserialize,
    responseSerialize: json.serialize,
    responseDeserialize: json.deserialize,
    originalName: 'hello',
  },
};

/**
 * Where each cluster's greeter listens: the address and port its cluster's manifests
 * (examples/grpc-demo/<cluster>/greeter.yaml) register as the ready endpoint of Service greeter/greeter.
 * Distinct loopback addresses stand for the two clusters' pod networks.
 */
export const GREETERS: Readonly<Record<string, { readonly address: string; readonly port: number }>> = {
  'cluster-a': { address: '127.0.0.71', port: 17071 },
  'cluster-b': { address: '127.0.0.72', port: 17071 },
};

/**
 * The host and port the client dials: the VirtualDestination greeter-global
 * (examples/grpc-demo/cluster-a/greeter.yaml).
 */
export const GREETER_TARGET = 'xds:///greeter.global:17070';
