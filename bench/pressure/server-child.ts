/**
 * The server side of `node bench/pressure/run.ts`: a management server in a
 * process of its own, so its memory and open files can be measured apart from
 * the attacker. Talks to the parent over IPC: sends { ready, port, identity },
 * answers { probe } with { rss, fds }, and { outputs, count, bytes } by
 * publishing that many distinct, incompressible outputs for cluster "a".
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { buildOutputSnapshot } from '@meshrelay/api';
import { parseServerConfig, startManagementServer } from '@meshrelay/mgmt-server';
import { registerWithToken } from './identity.ts';

const stateDir = mkdtempSync(join(tmpdir(), 'meshrelay-pressure-'));
const config = parseServerConfig([
  '--relay-host',
  '127.0.0.1',
  '--relay-port',
  '0',
  '--http-host',
  '127.0.0.1',
  '--http-port',
  '0',
  '--metrics-port',
  '0',
  '--state-dir',
  stateDir,
  '--safe-start-window',
  '0',
  '--replica-name',
  'pressure-0',
  ...process.argv.slice(2),
]);
const server = await startManagementServer(config, pino({ level: 'silent' }));
const { token } = await server.registry.register('a', {});
const identity = await registerWithToken(`localhost:${server.relayPort}`, server.ca.certPem, 'a', token);

function probe(): { rss: number; fds: number } {
  global.gc?.();
  return { rss: process.memoryUsage().rss, fds: readdirSync('/proc/self/fd').length };
}

process.on('message', (msg: { probe?: boolean; outputs?: { count: number; bytes: number } }) => {
  if (msg.probe) process.send?.({ probe: probe() });
  if (msg.outputs) {
    for (let i = 0; i < msg.outputs.count; i++) {
      const resource = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `filler-${i}`, namespace: 'default' },
        data: { filler: randomBytes(msg.outputs.bytes * 0.75).toString('base64') },
      };
      server.outputs.publish(buildOutputSnapshot({ cluster: 'a', resources: [resource], provenance: [] }));
    }
    process.send?.({ published: msg.outputs.count });
  }
});
process.on('disconnect', () => void server.stop().then(() => process.exit(0)));
process.send?.({ ready: true, port: server.relayPort, identity, probe: probe() });
