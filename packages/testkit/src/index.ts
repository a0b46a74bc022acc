export { startRedisServer, type RedisServerHandle, type RedisServerOptions } from './redis-server.ts';
export {
  MAX_CAPTURED_LINES,
  freePort,
  spawnProcess,
  waitFor,
  type LineMatcher,
  type ProcessExit,
  type ProcessHandle,
  type SpawnOptions,
  type WaitForLineOptions,
  type WaitForOptions,
} from './process-harness.ts';
export { createTestPki, TEST_TRUST_DOMAIN, type TestClientCert, type TestPki, type TestPkiOptions } from './pki.ts';
export * from './builders.ts';
export { allOnes, csrWithPublicExponent, csrWithPublicKey } from './hostile-csr.ts';
export { STATUS_FIXTURE_NAMESPACE, statusFixture } from './gloo-status-fixtures.ts';
export { ARTIFACTS_ROOT, CHROMIUM_PATH, openBrowserPage, saveScreenshot } from './browser.ts';
export {
  startFakeKubeApiServer,
  type FakeKubeApiServer,
  type FakeKubeApiServerOptions,
  type FakeKubeConfigOptions,
  type FakeKubeFailureOptions,
  type FakeKubeObjectInput,
  type FakeKubeRequest,
} from './fake-kube-api-server.ts';
export { FAKE_KUBE_RESOURCE_TYPES, type FakeKubeResourceType } from './fake-kube-resource-types.ts';
export { FAKE_KUBE_MAX_DATA_BYTES } from './fake-kube-store.ts';
export type { FakeKubeMetadata, FakeKubeObject } from './fake-kube-selectors.ts';
export { startFaultProxy, type FaultProxy } from './fault-proxy.ts';
export {
  startHealthProbe,
  startHeartbeatProbe,
  type HeartbeatProbeTarget,
  type ProbeWindow,
  type ResponsivenessProbe,
} from './responsiveness-probe.ts';
export { startRelayPullDouble, type RelayPullDouble } from './relay-pull-double.ts';
