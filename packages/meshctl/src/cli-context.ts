import { Argument, InvalidArgumentError, Option, type Command } from 'commander';
import { MeshrelayError, isValidClusterName, parseDuration } from '@meshrelay/api';
import { CREDENTIAL_ENV, LOCAL_STATE_DIRS, resolveAdminCredential, type AdminCredential } from './admin-credential.ts';
import {
  DEFAULT_SERVER,
  DEFAULT_TIMEOUT_MS,
  createApiClient,
  normalizeServerUrl,
  type ApiClient,
} from './http-client.ts';
import { formatJson } from './format.ts';

export interface OutputStream {
  write(chunk: string): unknown;
}

/** Where a meshctl run reads its environment and writes its output. */
export interface MeshctlIo {
  readonly stdout: OutputStream;
  readonly stderr: OutputStream;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The clock ages are measured against; defaults to the system clock. */
  readonly now?: () => Date;
  /** Opens a URL in a browser without waiting; defaults to the desktop's opener (xdg-open, open). */
  readonly openBrowser?: (url: string) => void;
  /** Relative paths (token file, state directory) start here; defaults to the process's working directory. */
  readonly cwd?: string;
}

/** `table` is another name for `text` (the default: tables and sentences for a terminal). */
export type OutputFormat = 'text' | 'table' | 'json';
export const OUTPUT_FORMATS: readonly OutputFormat[] = ['text', 'table', 'json'];

/** The options every command accepts, after flags, environment and defaults were merged. */
export interface GlobalOptions {
  readonly server: string;
  readonly adminToken: string | undefined;
  readonly adminTokenFile: string | undefined;
  /** An explicit state directory to find the admin token in; undefined = the local run's. */
  readonly stateDir: string | undefined;
  readonly output: OutputFormat;
  readonly timeoutMs: number;
}

export const GLOBAL_ENV = {
  server: 'MESHCTL_SERVER',
  adminToken: CREDENTIAL_ENV.token,
  adminTokenFile: CREDENTIAL_ENV.tokenFile,
  stateDir: CREDENTIAL_ENV.stateDir,
  output: 'MESHCTL_OUTPUT',
  timeout: 'MESHCTL_TIMEOUT',
} as const;

const MAX_TIMEOUT_MS = 10 * 60 * 1000;

/** A usage mistake (bad flag value, bad argument): meshctl exits 2 without calling the server. */
export function usageError(message: string): MeshrelayError {
  return new MeshrelayError('MESHRELAY_ERR_INVALID_ARGUMENT', message);
}

/**
 * Adds --server, the admin credential options, -o/--output and --timeout; commander shows each default and variable in
 * --help.
 */
export function addGlobalOptions(program: Command): void {
  program
    .addOption(
      new Option('--server <url>', `management server HTTP API (env: ${GLOBAL_ENV.server})`).default(DEFAULT_SERVER),
    )
    .addOption(
      new Option(
        '--admin-token <token>',
        `the server's admin token, sent on every API call (env: ${GLOBAL_ENV.adminToken})`,
      ),
    )
    .addOption(
      new Option(
        '--admin-token-file <path>',
        `read the admin token from this file (env: ${GLOBAL_ENV.adminTokenFile})`,
      ),
    )
    .addOption(
      new Option(
        '--state-dir <dir>',
        `the server's state directory, to read its admin-token file (env: ${GLOBAL_ENV.stateDir}; ` +
          `default for a server on this machine: the local run's, ${LOCAL_STATE_DIRS.join(' or ')})`,
      ),
    )
    .addOption(
      new Option('-o, --output <format>', `output format (env: ${GLOBAL_ENV.output})`)
        .choices(OUTPUT_FORMATS)
        .default('text'),
    )
    .addOption(
      new Option(
        '--timeout <duration>',
        `per-request timeout: a duration (500ms, 30s, 2m) or bare milliseconds (env: ${GLOBAL_ENV.timeout})`,
      ).default(String(DEFAULT_TIMEOUT_MS)),
    );
}

/** The per-run state commands share: io, merged global options, the API client. */
export class CliContext {
  readonly io: MeshctlIo;
  #exitCode = 0;

  constructor(io: MeshctlIo) {
    this.io = io;
  }

  /** The exit code of a command that ran to its end; not 0 when it reported a problem it found (a failed check). */
  get exitCode(): number {
    return this.#exitCode;
  }

  /** Makes a command that printed its answer exit with `code`, without an error line. */
  setExitCode(code: number): void {
    this.#exitCode = code;
  }

  now(): Date {
    return this.io.now ? this.io.now() : new Date();
  }

  /**
   * Merges the global options of `command`: a flag wins over its environment
   * variable, which wins over the default. Throws a usage error naming a bad value.
   */
  globals(command: Command): GlobalOptions {
    const opts = command.optsWithGlobals<Record<string, string | undefined>>();
    const pick = (key: string, env: string): string | undefined => {
      const source = command.getOptionValueSourceWithGlobals(key);
      const fromEnv = this.io.env[env];
      return (source === undefined || source === 'default') && fromEnv !== undefined && fromEnv !== ''
        ? fromEnv
        : opts[key];
    };
    const output = pick('output', GLOBAL_ENV.output) ?? 'text';
    if (!OUTPUT_FORMATS.includes(output as OutputFormat)) {
      throw usageError(`--output (${GLOBAL_ENV.output}): "${output}" is not one of ${OUTPUT_FORMATS.join(', ')}`);
    }
    const timeout = pick('timeout', GLOBAL_ENV.timeout) ?? String(DEFAULT_TIMEOUT_MS);
    const parsed = parseDuration(timeout, 1);
    if ('error' in parsed || parsed.value > MAX_TIMEOUT_MS) {
      throw usageError(
        `--timeout (${GLOBAL_ENV.timeout}): ${'error' in parsed ? parsed.error : `${timeout} is longer than ${MAX_TIMEOUT_MS} ms`}`,
      );
    }
    const timeoutMs = parsed.value;
    const adminToken = pick('adminToken', GLOBAL_ENV.adminToken);
    if (adminToken !== undefined && adminToken.trim() === '') throw usageError('--admin-token must not be empty');
    const adminTokenFile = pick('adminTokenFile', GLOBAL_ENV.adminTokenFile);
    const stateDir = pick('stateDir', GLOBAL_ENV.stateDir);
    const server = normalizeServerUrl(pick('server', GLOBAL_ENV.server) ?? DEFAULT_SERVER);
    return { server, adminToken, adminTokenFile, stateDir, output: output as OutputFormat, timeoutMs };
  }

  /** The admin credential from flags, environment or the local state directory; throws naming every way to give it. */
  adminCredential(command: Command): AdminCredential {
    const g = this.globals(command);
    return resolveAdminCredential({
      token: g.adminToken,
      tokenFile: g.adminTokenFile,
      stateDir: g.stateDir,
      cwd: this.io.cwd ?? process.cwd(),
      server: g.server,
    });
  }

  /** A client that sends the admin credential on every call; fails before any call when there is none. */
  client(command: Command): ApiClient {
    const g = this.globals(command);
    const credential = this.adminCredential(command);
    return createApiClient({
      server: g.server,
      adminToken: credential.token,
      adminTokenSource: credential.source,
      timeoutMs: g.timeoutMs,
    });
  }

  print(text: string): void {
    this.io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  printJson(value: unknown): void {
    this.io.stdout.write(formatJson(value));
  }
}

/** Commander argument parser: a cluster name must be a DNS-1123 label. */
export function parseClusterName(value: string): string {
  if (!isValidClusterName(value)) {
    throw new InvalidArgumentError(
      `"${value}" is not a valid cluster name (a DNS-1123 label: at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit)`,
    );
  }
  return value;
}

/** The <name> argument of every per-cluster command, validated before any call. */
export function clusterArgument(name = 'name'): Argument {
  return new Argument(`<${name}>`, 'cluster name (DNS-1123 label)').argParser(parseClusterName);
}
