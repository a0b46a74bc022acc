export { generateKeyPair, generateKeyPairAsync, type KeyPair } from './keys.ts';
export { assertCaBundle, createRootCa, type CaBundle, type RootCaOptions } from './ca.ts';
export {
  createCsr,
  signClientCsr,
  type ClientCertificateOptions,
  type CsrOptions,
  type IssuedClientCertificate,
} from './client-cert.ts';
export {
  DEFAULT_SERVER_HOSTS,
  issueServerCertificate,
  type IssuedServerCertificate,
  type ServerCertificateOptions,
} from './server-cert.ts';
export { certificateInfo, verifyClientCertificate, type CertificateInfo, type ClientIdentity } from './verify.ts';
export { CA_FILE_NAME, ensureRelayCa, FileCaStore, type CaStore, type EnsureCaOptions } from './ca-store.ts';
export { CLOCK_SKEW_SECONDS } from './x509.ts';
export {
  createIntermediateCsr,
  createMeshRoot,
  rootIdOf,
  signIntermediateCsr,
  type IntermediateCsrOptions,
  type IssuedIntermediate,
  type MeshRootOptions,
  type SignIntermediateOptions,
} from './mesh-ca.ts';
export {
  issueWorkloadCertificate,
  jitteredLifetimeSeconds,
  renewalTime,
  workloadSpiffeId,
  type IssuedWorkloadCert,
  type WorkloadCertOptions,
} from './workload-cert.ts';
export { bundlePem, isExactBundleStep, targetFor, type RotationPhase, type TrustTarget } from './trust-phases.ts';
