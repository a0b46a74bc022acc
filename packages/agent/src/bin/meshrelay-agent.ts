/**
 * `meshrelay-agent`: the relay agent with the file discovery provider.
 * Exit codes: 0 after a clean stop (SIGTERM/SIGINT) or --help, 2 on bad
 * configuration, 1 on any other failure to start.
 */
import { CommanderError } from 'commander';
import { pino } from 'pino';
import { MeshrelayError } from '@meshrelay/api';
import { Agent } from '../agent.ts';
import { parseAgentConfig, type AgentConfig } from '../config.ts';

function configOrExit(): AgentConfig {
  try {
    return parseAgentConfig(process.argv.slice(2));
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.exitCode === 0) process.exit(0);
      console.error(`meshrelay-agent: ${err.message.replace(/^error: /, '')} (see --help)`);
      process.exit(2);
    }
    if (err instanceof MeshrelayError) {
      console.error(`meshrelay-agent: invalid configuration: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
}

const config = configOrExit();
const logger = pino({
  level: config.logLevel,
  base: { cluster: config.cluster, replica: config.replicaId, pid: process.pid },
});
const agent = buildOrExit();

/**
 * The agent, or exit 2 when a backend or the leader election cannot be set up from the config (e.g. an unreadable
 * kubeconfig).
 */
function buildOrExit(): Agent {
  try {
    return new Agent(config, logger);
  } catch (err) {
    if (err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_INVALID_CONFIG') {
      console.error(`meshrelay-agent: invalid configuration: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
}

let stopping = false;
async function shutdown(signal: NodeJS.Signals): Promise<void> {
  if (stopping) {
    logger.warn({ signal }, 'second signal during shutdown; exiting now');
    process.exit(1);
  }
  stopping = true;
  logger.info({ signal }, 'stopping relay agent');
  try {
    await agent.stop();
    process.exit(0);
  } catch (err) {
    logger.error({ err }, 'relay agent did not stop cleanly');
    process.exit(1);
  }
}
process.on('SIGTERM', (signal) => void shutdown(signal));
process.on('SIGINT', (signal) => void shutdown(signal));

try {
  await agent.start();
} catch (err) {
  if (err instanceof MeshrelayError && err.code === 'MESHRELAY_ERR_INVALID_CONFIG') {
    console.error(`meshrelay-agent: invalid configuration: ${err.message}`);
    await agent.stop().catch(() => undefined);
    process.exit(2);
  }
  logger.fatal({ err }, 'relay agent failed to start');
  await agent.stop().catch(() => undefined);
  process.exit(1);
}
