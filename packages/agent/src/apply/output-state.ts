import type { Logger } from 'pino';
import { AppliedOutputStore } from './applied-output-store.ts';
import type { AppliedOutput } from './applied-output-check.ts';

export { checkAppliedOutput, writeFileAtomic, type AppliedOutput } from './applied-output-check.ts';

/**
 * Persists `output` as the last applied output in the state dir (every applier uses it), so a
 * restarted agent keeps serving it while the management plane is unreachable. A one-off store:
 * an applier keeps its own `AppliedOutputStore`, which writes only what changed.
 */
export async function writeAppliedOutput(stateDir: string, output: AppliedOutput): Promise<void> {
  const store = new AppliedOutputStore(stateDir);
  await store.save(output);
}

/**
 * Reads the persisted output back, re-checking its hash and cluster. A missing,
 * corrupt or foreign-cluster state is logged and gives undefined.
 */
export async function readAppliedOutput(
  stateDir: string,
  cluster: string,
  logger: Logger,
): Promise<AppliedOutput | undefined> {
  return new AppliedOutputStore(stateDir).load(cluster, logger);
}
