/** The Istio → xDS translation: pure functions from a cluster's applied Istio output and discovered endpoints to xDS resources. */
export {};
