import {
  loadPackageDefinition,
  type GrpcObject,
  type ServiceClientConstructor,
  type ServiceDefinition,
} from '@grpc/grpc-js';
import { loadSync, type Options as ProtoLoaderOptions } from '@grpc/proto-loader';
import { RESOURCE_PROTO_FILES } from '@meshrelay/xds';
import { envoyProtoIncludeDirs } from '../observability/access-log-sink.ts';

/**
 * The ADS protos plus every message type the served resources carry, so that
 * proto-loader's serializer packs a resource written as `{'@type': url, ...fields}`
 * into a google.protobuf.Any by itself (the type is looked up in the same loaded root).
 */
const PROTO_FILES = ['envoy/service/discovery/v3/ads.proto', ...RESOURCE_PROTO_FILES];

/**
 * snake_case fields as the xds package writes them; enums as names; absent fields left out;
 * `json` decodes a received Any into `{'@type', ...fields}` (clients and tests read responses so).
 */
export const ADS_PROTO_OPTIONS: ProtoLoaderOptions = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: false,
  oneofs: true,
  json: true,
};

let loaded: GrpcObject | undefined;

function adsPackage(): GrpcObject {
  if (loaded === undefined) {
    const definition = loadSync(PROTO_FILES, { ...ADS_PROTO_OPTIONS, includeDirs: envoyProtoIncludeDirs() });
    const grpc = loadPackageDefinition(definition);
    loaded = (((grpc['envoy'] as GrpcObject)['service'] as GrpcObject)['discovery'] as GrpcObject)['v3'] as GrpcObject;
  }
  return loaded;
}

/** The AggregatedDiscoveryService client constructor (a server uses its `.service`). */
export function loadAdsService(): ServiceClientConstructor {
  return adsPackage()['AggregatedDiscoveryService'] as ServiceClientConstructor;
}

export function adsServiceDefinition(): ServiceDefinition {
  return loadAdsService().service;
}

/** A DiscoveryRequest as proto-loader decodes it with ADS_PROTO_OPTIONS. */
export interface DiscoveryRequest {
  readonly version_info?: string;
  readonly node?: {
    readonly id?: string;
    readonly cluster?: string;
    readonly locality?: { readonly region?: string; readonly zone?: string; readonly sub_zone?: string } | null;
  } | null;
  readonly resource_names?: readonly string[];
  readonly type_url?: string;
  readonly response_nonce?: string;
  readonly error_detail?: { readonly code?: number; readonly message?: string } | null;
}

export interface DiscoveryResponse {
  readonly version_info: string;
  readonly resources: readonly Record<string, unknown>[];
  readonly type_url: string;
  readonly nonce: string;
}
