/**
 * The one gRPC method of the xDS end-to-end suite, `/meshrelay.e2e.Who/Ask`: the request is
 * empty, the answer is the backend's identity as JSON. No .proto: a JSON codec keeps the
 * backends and clients free of generated code, and xDS routes by path and headers only.
 */
import type * as grpc from '@grpc/grpc-js';

export const WHO_PATH = '/meshrelay.e2e.Who/Ask';

export interface Identity {
  readonly cluster: string;
  readonly version: string;
  readonly locality: string;
  readonly address: string;
}

const json = {
  serialize: (value: unknown): Buffer => Buffer.from(JSON.stringify(value ?? {})),
  deserialize: (bytes: Buffer): unknown => (bytes.length === 0 ? {} : JSON.parse(bytes.toString('utf8'))),
};

export const WHO_SERVICE: grpc.ServiceDefinition = {
  Ask: {
    path: WHO_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: json.serialize,
    requestDeserialize: json.deserialize,
    responseSerialize: json.serialize,
    responseDeserialize: json.deserialize,
    originalName: 'ask',
  },
};

/** The identity key counts are kept by: `cluster/version/address`. */
export function identityKey(id: Identity): string {
  return `${id.cluster}/${id.version}/${id.address}`;
}
