export {
  validateElectionTiming,
  type ElectionTiming,
  type ElectorBaseOptions,
  type LeaderElector,
} from './leader-elector.ts';
export { decideLease, releasedLease, type LeaseDecision, type LeaseRecord } from './lease-record.ts';
export { createLeaseElector, type LeaseElectorOptions, type LeaseStore, type LeaseUpdate } from './lease-elector.ts';
export {
  FileLeaseStore,
  createFileLeaderElector,
  parseLeaseFile,
  type FileLeaderElectorOptions,
} from './file-lease-store.ts';
export {
  KubernetesLeaseStore,
  createKubernetesLeaderElector,
  leaseRecordOf,
  leaseSpecOf,
  type KubernetesLeaderElectorOptions,
} from './kubernetes-lease-store.ts';
export { loadKubeConfig, type KubeConfigSource } from './kube-config.ts';
