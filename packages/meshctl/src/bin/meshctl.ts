import { runMeshctl } from '../cli.ts';

process.exitCode = await runMeshctl(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
