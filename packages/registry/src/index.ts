// The cluster registry shared by the management server and meshctl: registry backends (state
// directory, Kubernetes API), relay identity tokens, the relay CA Secret store, VIP allocation
// stores, and the JSON shapes of the HTTP API.
export type {
  ClusterRegistry,
  ClusterUpdate,
  RegisterOptions,
  RegistrationResult,
  RegistryChange,
  RevocationResult,
} from './cluster-registry.ts';
export { formatRevocationMark, isRevoked, revocationMark, revokedBefore } from './revocation.ts';
export { readClusterObject, revokeClusterInKubernetes, type KubernetesRevocation } from './kubernetes-revocation.ts';
export { ClusterCache } from './cluster-cache.ts';
export { createFileClusterRegistry, type FileRegistryOptions } from './file-cluster-registry.ts';
export {
  createKubernetesClusterRegistry,
  type KubernetesRegistryOptions,
  type StatusWriterElection,
} from './kubernetes-cluster-registry.ts';
export {
  CLUSTER_NAME_LABEL,
  KUBERNETES_CLUSTER_API,
  MESHRELAY_MANAGED_LABELS,
  RELAY_ROOT_CA_SECRET,
  RELAY_TOKEN_SECRET_PREFIX,
  VIP_ALLOCATIONS_CONFIGMAP,
  clusterFromObject,
  createClusterWithToken,
  kubeErrorCode,
  kubeFailure,
  registryApis,
  retryTransient,
  tokenSecretName,
  type CreateClusterOptions,
  type CreatedCluster,
  type KubernetesClusterObject,
  type KubernetesRegistryApis,
} from './kubernetes-objects.ts';
export { KubernetesSecretCaStore } from './kubernetes-secret-ca-store.ts';
export { meshRootSecretName, readRootCaSecret } from './kubernetes-root-secret.ts';
export { writeRootTrustPolicyStatus } from './kubernetes-root-trust-policy-status.ts';
export { TOKEN_PREFIX, hashToken, issueToken, tokenMatches, type IssuedToken, type TokenRecord } from './tokens.ts';
export { VipAllocations, type VipAllocationStore } from './vip-allocations.ts';
export { decodeVipTable, reconcileVips, type VipAllocation, type VipDemand, type VipTable } from './vip-ownership.ts';
export { KubernetesVipAllocations } from './kubernetes-vip-allocations.ts';
export type {
  ClusterView,
  HeldOutputView,
  RelayEndpointView,
  ResourceView,
  RevocationResponse,
} from './http-api-types.ts';
export {
  assertDocumentName,
  documentBytes,
  pollDocumentChanges,
  type DocumentBody,
  type DocumentRevision,
  type SharedDocumentStore,
} from './shared-documents.ts';
export { DirectoryDocumentStore } from './directory-document-store.ts';
export {
  KubernetesDocumentStore,
  MAX_CHUNK_BYTES,
  SHARED_DOCUMENT_LABEL,
  SHARED_DOCUMENT_NAME_ANNOTATION,
  SHARED_STATE_LABEL,
  SHARED_STATE_PART_LABEL,
} from './kubernetes-document-store.ts';
export {
  KubernetesResourceWatch,
  startKubernetesResourceWatch,
  type KubernetesResourceWatchOptions,
  type WatchedObjects,
  type WatchedResourceKind,
} from './kubernetes-resource-watch.ts';
export {
  WORKSPACE_API,
  WorkspaceSet,
  judgeWorkspace,
  startKubernetesWorkspaces,
  type KubernetesWorkspaceOptions,
  type WorkspaceSource,
} from './kubernetes-workspaces.ts';
export {
  parseRootTrustPolicy,
  type CertOptions,
  type MgmtServerCa,
  type RootTrustPolicy,
} from './root-trust-policy.ts';
export {
  ROOT_TRUST_POLICY_API,
  RootTrustPolicySet,
  startKubernetesRootTrustPolicy,
  type KubernetesRootTrustPolicyOptions,
  type RootTrustPolicySource,
  type RootTrustPolicyState,
} from './kubernetes-root-trust-policy.ts';
