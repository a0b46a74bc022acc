/**
 * The agent process's runtime: every setting the agent binary gives its own process, in one
 * place, each because of a measurement (docs/design/decisions/README.md, the sections named
 * below). `prepareAgentProcess` is called first by bin/meshrelay-agent.js; nothing else in the
 * agent tunes the process. The compile cache is enabled by the binary itself, before this module
 * loads (#compile-cache).
 */
import { setFlagsFromString } from 'node:v8';

/**
 * V8 runs GC and compilation helpers on a pool of platform threads (4 by default), and every
 * helper that ever worked keeps its own malloc arena (#agent-v8-pool-size). An agent is idle most
 * of its life, so one helper is plenty. The pool size can only be chosen when the process starts.
 */
export const AGENT_POOL_FLAG = '--v8-pool-size=1';

/**
 * The arguments to start the agent again with, or undefined when it runs as it is: the pool size
 * is already chosen (by this function's restart, or by the operator).
 */
export function agentRestartArgs(execArgv: readonly string[], argv: readonly string[]): string[] | undefined {
  if (execArgv.some((arg) => arg.startsWith('--v8-pool-size'))) return undefined;
  return [AGENT_POOL_FLAG, ...execArgv, ...argv.slice(1)];
}

/**
 * Readies this process before the agent loads. Starts it once more, in place, with the pool flag
 * when it lacks one (`process.execve` keeps the pid, the open stdio and the environment). Then
 * sets V8's size-over-speed heap policy: every workload cluster runs an agent, and the policy keeps
 * its heap close to what it holds instead of growing it ahead of the first scan's garbage, at no
 * measurable cost (#agent-optimize-for-size).
 */
export function prepareAgentProcess(): void {
  const args = agentRestartArgs(process.execArgv, process.argv);
  if (args && typeof process.execve === 'function')
    process.execve(process.execPath, [process.execPath, ...args], process.env);
  setFlagsFromString('--optimize-for-size');
}
