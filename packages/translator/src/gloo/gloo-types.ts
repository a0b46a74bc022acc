/**
 * TypeScript shapes of the Gloo Mesh v2 specs Meshrelay supports. They are what the
 * schemas in `schemas/` admit, so the translator reads them only after validation.
 */

export type StringMap = Readonly<Record<string, string>>;

export interface ObjectSelector {
  readonly labels?: StringMap;
  readonly name?: string;
  readonly namespace?: string;
  readonly cluster?: string;
  readonly workspace?: string;
}

export interface PortSelector {
  readonly number?: number;
  readonly name?: string;
}

export type DestinationKind = 'SERVICE' | 'VIRTUAL_DESTINATION' | 'EXTERNAL_SERVICE';

export interface DestinationSelector {
  readonly selector?: ObjectSelector;
  readonly kind?: DestinationKind;
  readonly port?: PortSelector;
}

export interface ObjectReference {
  readonly name: string;
  readonly namespace?: string;
  readonly cluster?: string;
}

export interface DestinationReference {
  /** Absent only for a function (awsLambda) destination, which Meshrelay does not implement. */
  readonly ref: ObjectReference;
  readonly subset?: StringMap;
  readonly kind?: DestinationKind;
  readonly port?: PortSelector;
  readonly weight?: number;
}

export interface VirtualDestinationPort {
  readonly number: number;
  readonly protocol: string;
  readonly targetPort?: PortSelector;
}

export interface VirtualDestinationSpec {
  readonly hosts: readonly string[];
  readonly services?: readonly ObjectSelector[];
  readonly ports: readonly VirtualDestinationPort[];
}

export interface StringMatch {
  readonly exact?: string;
  readonly prefix?: string;
  readonly regex?: string;
  readonly suffix?: string;
  readonly ignoreCase?: boolean;
}

export interface HttpRequestMatcher {
  readonly uri?: StringMatch;
  readonly headers?: readonly {
    readonly name: string;
    readonly value?: string;
    readonly regex?: boolean;
    readonly invertMatch?: boolean;
  }[];
  readonly queryParameters?: readonly { readonly name: string; readonly value?: string; readonly regex?: boolean }[];
  readonly method?: string;
  readonly port?: number;
}

export interface ForwardToAction {
  readonly destinations?: readonly DestinationReference[];
  readonly pathRewrite?: string;
  readonly regexRewrite?: { readonly pattern: { readonly regex: string }; readonly substitution?: string };
  readonly hostRewrite?: string;
}

export type RedirectResponseCode =
  'MOVED_PERMANENTLY' | 'FOUND' | 'SEE_OTHER' | 'TEMPORARY_REDIRECT' | 'PERMANENT_REDIRECT';

export interface DelegateAction {
  readonly routeTables?: readonly ObjectSelector[];
  readonly sortMethod?: 'TABLE_WEIGHT' | 'ROUTE_SPECIFICITY';
}

/** One action per route (a oneof); a route with only unimplemented actions has none of these. */
export interface HttpRoute {
  readonly name?: string;
  readonly labels?: StringMap;
  readonly matchers?: readonly HttpRequestMatcher[];
  readonly forwardTo?: ForwardToAction;
  readonly delegate?: DelegateAction;
  readonly redirect?: {
    readonly hostRedirect?: string;
    readonly pathRedirect?: string;
    readonly responseCode?: RedirectResponseCode;
  };
  readonly directResponse?: { readonly status: number; readonly body?: string };
}

export interface WorkloadSelector {
  readonly selector?: ObjectSelector;
  readonly kind?: 'KUBE' | 'VM';
  readonly port?: PortSelector;
}

export interface RouteTableSpec {
  readonly hosts?: readonly string[];
  readonly virtualGateways?: readonly ObjectReference[];
  readonly workloadSelectors?: readonly WorkloadSelector[];
  readonly defaultDestination?: DestinationReference;
  readonly http?: readonly HttpRoute[];
  readonly weight?: number;
  readonly failureMode?: 'ROUTE_REPLACEMENT' | 'FREEZE_CONFIG';
  readonly virtualServiceAnnotations?: StringMap;
}

export interface IdentitySelector {
  readonly serviceAccountSelector?: ObjectSelector;
  readonly requestIdentityMatcher?: {
    readonly requestPrincipals?: readonly string[];
    readonly notRequestPrincipals?: readonly string[];
  };
}

export interface Authorization {
  readonly allowedClients?: readonly IdentitySelector[];
  readonly allowedPaths?: readonly string[];
  readonly allowedMethods?: readonly string[];
  readonly match?: {
    readonly request?: {
      readonly headers?: Readonly<
        Record<string, { readonly values?: readonly string[]; readonly notValues?: readonly string[] }>
      >;
    };
  };
  readonly allowedIpBlocks?: readonly string[];
  readonly allowedRemoteIpBlocks?: readonly string[];
  readonly dryRun?: boolean;
}

export type TlsMode = 'DISABLE' | 'PERMISSIVE' | 'STRICT';

export interface AccessPolicySpec {
  readonly applyToDestinations?: readonly DestinationSelector[];
  readonly applyToWorkloads?: readonly {
    readonly selector?: {
      readonly labels?: StringMap;
      readonly namespace?: string;
      readonly cluster?: string;
      readonly workspace?: string;
    };
  }[];
  readonly config: {
    readonly authn?: { readonly tlsMode?: TlsMode };
    readonly authz?: Authorization;
    readonly authzList?: readonly Authorization[];
  };
}

export interface Locality {
  readonly region: string;
  readonly zone?: string;
  readonly subZone?: string;
}

export interface FailoverPolicySpec {
  readonly applyToDestinations?: readonly DestinationSelector[];
  readonly config: {
    readonly localityMappings?: readonly {
      readonly from: Locality;
      readonly to: readonly (Locality & { readonly weight?: number })[];
    }[];
    readonly priorityLabels?: { readonly labels: readonly string[] };
  };
}

export interface OutlierDetectionPolicySpec {
  readonly applyToDestinations?: readonly DestinationSelector[];
  readonly config: {
    readonly consecutiveErrors?: number;
    readonly consecutiveGatewayErrors?: number;
    readonly interval?: string;
    readonly baseEjectionTime?: string;
    readonly maxEjectionPercent?: number;
  };
}

/** trafficcontrol.policy.gloo.solo.io/v2 LoadBalancerPolicy: how a destination's endpoints are picked. */
export interface LoadBalancerPolicySpec {
  readonly applyToDestinations?: readonly DestinationSelector[];
  readonly config: {
    readonly simple?: 'UNSPECIFIED' | 'RANDOM' | 'PASSTHROUGH' | 'ROUND_ROBIN' | 'LEAST_REQUEST';
    readonly consistentHash?: {
      readonly httpHeaderName?: string;
      readonly httpCookie?: { readonly name: string; readonly path?: string; readonly ttl?: string };
      readonly useSourceIp?: boolean;
      readonly httpQueryParameterName?: string;
    };
    readonly warmupDurationSecs?: string;
    readonly healthyPanicThreshold?: number;
    readonly updateMergeWindow?: string;
  };
}

export interface RouteSelector {
  readonly route?: {
    readonly labels?: StringMap;
    readonly namespace?: string;
    readonly cluster?: string;
    readonly workspace?: string;
  };
  readonly withDestinations?: DestinationSelector;
}

export interface RetryTimeoutPolicySpec {
  readonly applyToRoutes?: readonly RouteSelector[];
  readonly config: {
    readonly retries?: {
      readonly attempts?: number;
      readonly perTryTimeout?: string;
      readonly retryOn?: string;
      readonly retryRemoteLocalities?: boolean;
    };
    readonly requestTimeout?: string;
  };
}

export interface FaultInjectionPolicySpec {
  readonly applyToRoutes?: readonly RouteSelector[];
  readonly config: {
    readonly delay?: { readonly fixedDelay: string; readonly percentage?: number };
    readonly abort?: { readonly httpStatus: number; readonly percentage?: number };
  };
}

export interface HeaderManipulationPolicySpec {
  readonly applyToRoutes?: readonly RouteSelector[];
  readonly config: {
    readonly removeResponseHeaders?: readonly string[];
    readonly appendResponseHeaders?: StringMap;
    readonly removeRequestHeaders?: readonly string[];
    readonly appendRequestHeaders?: StringMap;
  };
}

export interface CorsPolicySpec {
  readonly applyToRoutes?: readonly RouteSelector[];
  readonly config: {
    readonly allowOrigins?: readonly StringMatch[];
    readonly allowMethods?: readonly string[];
    readonly allowHeaders?: readonly string[];
    readonly exposeHeaders?: readonly string[];
    readonly maxAge?: string;
    readonly allowCredentials?: boolean;
  };
}

export interface MirrorPolicySpec {
  readonly applyToRoutes?: readonly RouteSelector[];
  readonly config: { readonly destination: DestinationReference; readonly percentage?: number };
}

export type ClientTlsMode = 'SIMPLE' | 'DISABLE' | 'MUTUAL' | 'ISTIO_MUTUAL';

export interface ExternalServicePort {
  readonly number: number;
  readonly targetPort?: PortSelector;
  readonly name?: string;
  readonly protocol: string;
  readonly clientsideTls?: {
    readonly sni?: string;
    readonly mode?: ClientTlsMode;
    readonly clientCertificate?: string;
    readonly privateKey?: string;
    readonly caCertificates?: string;
    readonly credentialName?: string;
    readonly insecureSkipVerify?: boolean;
  };
}

export interface ExternalServiceSpec {
  readonly hosts: readonly string[];
  readonly addresses?: readonly string[];
  readonly ports: readonly ExternalServicePort[];
  readonly selector?: StringMap;
  readonly subjectAltNames?: readonly string[];
}

export interface ExternalEndpointSpec {
  readonly address: string;
  readonly ports?: readonly { readonly name: string; readonly number: number }[];
  readonly locality?: { readonly region?: string; readonly zone?: string; readonly subZone?: string };
}

export interface VirtualGatewayListener {
  readonly port: PortSelector;
  readonly tls?: {
    readonly secretName?: string;
    readonly verifySubjectAltName?: readonly string[];
    readonly parameters?: {
      readonly minimumProtocolVersion?: string;
      readonly maximumProtocolVersion?: string;
      readonly cipherSuites?: readonly string[];
    };
    readonly mode?: 'PASSTHROUGH' | 'SIMPLE' | 'MUTUAL' | 'AUTO_PASSTHROUGH' | 'ISTIO_MUTUAL';
  };
  readonly httpsRedirect?: boolean;
  readonly http?: Record<string, never>;
  readonly tcp?: Record<string, never>;
  readonly appProtocol?: string;
}

export interface VirtualGatewaySpec {
  readonly workloads: readonly WorkloadSelector[];
  readonly listeners?: readonly VirtualGatewayListener[];
}
