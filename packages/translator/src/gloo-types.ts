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
  readonly ref: ObjectReference;
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
  readonly services: readonly ObjectSelector[];
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
  readonly headers?: readonly { readonly name: string; readonly value?: string; readonly regex?: boolean; readonly invertMatch?: boolean }[];
  readonly queryParameters?: readonly { readonly name: string; readonly value?: string; readonly regex?: boolean }[];
  readonly method?: string;
  readonly port?: number;
}

export interface HttpRoute {
  readonly name?: string;
  readonly labels?: StringMap;
  readonly matchers?: readonly HttpRequestMatcher[];
  readonly forwardTo: {
    readonly destinations?: readonly DestinationReference[];
    readonly pathRewrite?: string;
    readonly hostRewrite?: string;
  };
}

export interface RouteTableSpec {
  readonly hosts: readonly string[];
  readonly defaultDestination?: DestinationReference;
  readonly http: readonly HttpRoute[];
}

export interface IdentitySelector {
  readonly serviceAccountSelector?: ObjectSelector;
  readonly requestIdentityMatcher?: { readonly requestPrincipals?: readonly string[]; readonly notRequestPrincipals?: readonly string[] };
}

export interface AccessPolicySpec {
  readonly applyToDestinations?: readonly DestinationSelector[];
  readonly applyToWorkloads?: readonly { readonly selector?: { readonly labels?: StringMap; readonly namespace?: string; readonly cluster?: string } }[];
  readonly config: {
    readonly authz: {
      readonly allowedClients?: readonly IdentitySelector[];
      readonly allowedPaths?: readonly string[];
      readonly allowedMethods?: readonly string[];
      readonly allowedIpBlocks?: readonly string[];
      readonly allowedRemoteIpBlocks?: readonly string[];
    };
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
    readonly localityMappings?: readonly { readonly from: Locality; readonly to: readonly (Locality & { readonly weight?: number })[] }[];
    readonly priorityLabels?: { readonly labels: readonly string[] };
  };
}

export interface OutlierDetectionPolicySpec {
  readonly applyToDestinations?: readonly DestinationSelector[];
  readonly config: {
    readonly consecutiveErrors?: number;
    readonly interval?: string;
    readonly baseEjectionTime?: string;
    readonly maxEjectionPercent?: number;
  };
}

export interface RouteSelector {
  readonly route?: { readonly labels?: StringMap; readonly namespace?: string; readonly cluster?: string; readonly workspace?: string };
  readonly withDestinations?: DestinationSelector;
}

export interface RetryTimeoutPolicySpec {
  readonly applyToRoutes?: readonly RouteSelector[];
  readonly config: {
    readonly retries?: { readonly attempts?: number; readonly perTryTimeout?: string; readonly retryOn?: string; readonly retryRemoteLocalities?: boolean };
    readonly requestTimeout?: string;
  };
}
