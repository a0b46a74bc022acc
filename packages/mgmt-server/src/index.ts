export { parseServerConfig, serverCommand, type ServerConfig } from './config.ts';
export { startManagementServer, type ManagementServer } from './server.ts';
export { ADMIN_TOKEN_FILE, type AdminCredential } from './admin-credential.ts';
export { ADMIN_TOKEN_SECRET, ADMIN_TOKEN_SECRET_KEY } from './kubernetes-admin-credential.ts';
export { decideGate, requiredClusters, type GateConfig, type GateDecision, type GateInput } from './safe-mode-gate.ts';
export { createFileClusterRegistry, type FileRegistryOptions } from './registry/file-cluster-registry.ts';
export type { ClusterRegistry, RegistryChange, RegistrationResult } from './registry/cluster-registry.ts';
export type { ClusterView } from './http/cluster-view.ts';
export type { HeldOutput } from './held-outputs.ts';
export type { ResourceView } from './http/resource-view.ts';
export {
  createKubernetesClusterRegistry,
  type KubernetesRegistryOptions,
  type StatusWriterElection,
} from './registry/kubernetes-cluster-registry.ts';
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
  tokenSecretName,
  type CreateClusterOptions,
  type CreatedCluster,
  type KubernetesClusterObject,
  type KubernetesRegistryApis,
} from './registry/kubernetes-objects.ts';
export { KubernetesSecretCaStore } from './registry/kubernetes-secret-ca-store.ts';
export { KubernetesVipAllocations } from './kubernetes-vip-allocations.ts';
export type { VipAllocationStore } from './vip-allocations.ts';
