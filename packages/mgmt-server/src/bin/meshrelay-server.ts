import { CommanderError } from 'commander';
import { pino } from 'pino';
import { MeshrelayError } from '@meshrelay/api';
import { parseServerConfig } from '../config.ts';
import { startManagementServer } from '../server.ts';

async function main(): Promise<void> {
  let config;
  try {
    config = parseServerConfig(process.argv.slice(2));
  } catch (err) {
    if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2);
    if (err instanceof MeshrelayError) {
      console.error(`meshrelay-server: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const logger = pino({ level: config.logLevel, base: { component: 'mgmt-server' } });
  const server = await startManagementServer(config, logger);
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    server.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  console.error(`meshrelay-server: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
