import type { Resource } from '@meshrelay/api';

/** What the translation reads: one cluster's applied Istio output and its own discovered workloads. */
export interface XdsInput {
  /** The cluster this agent serves; Istio labels every endpoint it knows with it (`topology.istio.io/cluster`). */
  readonly cluster: string;
  /** The cluster's network, labelled on its own Kubernetes endpoints (`topology.istio.io/network`). */
  readonly network?: string;
  /** Kubernetes DNS suffix of Service hosts (default `cluster.local`). */
  readonly clusterDomain?: string;
  /** The applied output: ServiceEntry, DestinationRule and VirtualService resources are read; others ignored. */
  readonly output: readonly Resource[];
  /** The discovered input: Service, EndpointSlice, Pod and Node resources are read; others ignored. */
  readonly discovered: readonly Resource[];
  /**
   * Mesh trust, when the cluster's workloads hold mesh certificates: mesh destinations are then
   * called over mTLS and XdsServer listeners serve TLS. Absent: everything stays plaintext.
   */
  readonly meshTls?: MeshTls;
}

/** What the translation needs to know about mesh trust. */
export interface MeshTls {
  /** The trust domain of this cluster's workload certificates (`spiffe://<trustDomain>/ns/../sa/..`). */
  readonly trustDomain: string;
  /** Istio's root namespace: its PeerAuthentication and AuthorizationPolicy apply mesh-wide (default istio-system). */
  readonly rootNamespace?: string;
}

/** Where a proxy runs, from its node's locality; decides endpoint priorities. */
export interface ProxyLocality {
  readonly region?: string;
  readonly zone?: string;
  readonly subZone?: string;
  /** The proxy's own labels (node metadata), for failoverPriority keys other than the locality ones. */
  readonly labels?: Readonly<Record<string, string>>;
}

/**
 * Something a proxyless gRPC client cannot take, translated to what it takes or left out.
 * `source` names the Istio resource (`Kind namespace/name`), `field` its path, `sources`
 * the Gloo resources it came from (the output's `meshrelay.io/sources` ids).
 */
export interface XdsFinding {
  readonly source: string;
  readonly sources: readonly string[];
  readonly field: string;
  readonly message: string;
}

/** One xDS resource: its name, the proto object (snake_case fields, `@type` on Any), and a content hash. */
export interface XdsResource {
  readonly name: string;
  readonly hash: string;
  readonly body: Readonly<Record<string, unknown>>;
}

/** An endpoint as Istio sees it: address, port, the labels Istio matches subsets on, locality, weight. */
export interface ServiceEndpoint {
  readonly address: string;
  readonly port: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly locality: string;
  readonly weight: number;
}

/** One port of a service host. `endpoints` are those serving this port. */
export interface ServicePort {
  readonly number: number;
  readonly name: string;
  readonly endpoints: readonly ServiceEndpoint[];
}

/** A host proxies can call: a ServiceEntry host or a Kubernetes Service FQDN. */
export interface ServiceHost {
  readonly host: string;
  readonly namespace: string;
  /** A ServiceEntry with `location: MESH_EXTERNAL`: its endpoints hold no mesh certificates. */
  readonly external?: boolean;
  /**
   * The identities its endpoints present with mesh trust on (SPIFFE URIs): a ServiceEntry's
   * `subjectAltNames`, a Kubernetes Service's Pods' service accounts. Empty: any mesh identity.
   */
  readonly subjectAltNames?: readonly string[];
  readonly ports: readonly ServicePort[];
}
