/**
 * ADS streams as a proxyless gRPC client opens them, without the client: each on a channel of
 * its own (its own HTTP/2 connection, as separate workloads have), with a node id, explicit
 * resource names per type (never the wildcard) and an ACK for every response. Counts the
 * bytes of every DiscoveryResponse it receives (the serialized message, before decoding).
 */
import {
  credentials,
  makeGenericClientConstructor,
  type ClientDuplexStream,
  type ServiceDefinition,
} from '@grpc/grpc-js';
import { loadAdsService, type DiscoveryRequest, type DiscoveryResponse } from '@meshrelay/agent';

export const TYPE_URLS = {
  lds: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  rds: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
  cds: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  eds: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
} as const;

export type Subscription = Readonly<Record<keyof typeof TYPE_URLS, readonly string[]>>;

interface AdsClient {
  StreamAggregatedResources(): ClientDuplexStream<DiscoveryRequest, DiscoveryResponse>;
  close(): void;
}

/** One raw ADS stream: bytes and responses received so far. */
export class RawAdsStream {
  bytes = 0;
  responses = 0;
  readonly #client: AdsClient;
  readonly #call: ClientDuplexStream<DiscoveryRequest, DiscoveryResponse>;
  readonly #names = new Map<string, readonly string[]>();

  constructor(address: string, nodeId: string, subscription: Subscription) {
    const method = loadAdsService().service['StreamAggregatedResources'] as ServiceDefinition[string];
    // The deserializer sees the serialized message: counting there measures what travelled.
    const counted = {
      StreamAggregatedResources: {
        ...method,
        responseDeserialize: (bytes: Buffer): unknown => {
          this.bytes += bytes.length;
          return method.responseDeserialize(bytes);
        },
      },
    };
    const Client = makeGenericClientConstructor(counted, 'AggregatedDiscoveryService') as unknown as new (
      address: string,
      creds: ReturnType<typeof credentials.createInsecure>,
      options: object,
    ) => AdsClient;
    this.#client = new Client(address, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    this.#call = this.#client.StreamAggregatedResources();
    this.#call.on('data', (res: DiscoveryResponse) => this.#ack(res));
    // The bench ends streams by closing them; their errors then are expected.
    this.#call.on('error', () => {});
    let first = true;
    for (const [type, url] of Object.entries(TYPE_URLS)) {
      const names = subscription[type as keyof typeof TYPE_URLS];
      this.#names.set(url, names);
      this.#call.write({ ...(first ? { node: { id: nodeId } } : {}), type_url: url, resource_names: names });
      first = false;
    }
  }

  #ack(res: DiscoveryResponse): void {
    this.responses += 1;
    this.#call.write({
      type_url: res.type_url,
      version_info: res.version_info,
      response_nonce: res.nonce,
      resource_names: this.#names.get(res.type_url) ?? [],
    });
  }

  close(): void {
    this.#call.cancel();
    this.#client.close();
  }
}
