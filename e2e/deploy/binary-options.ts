// The environment variables the binaries actually read, taken from their own command definitions,
// so the chart and the compose file are checked against the code rather than against a copy.
import { buildAgentCommand } from '@meshrelay/agent';
import { serverCommand } from '@meshrelay/mgmt-server';

export interface EnvOption {
  /** The option's attribute name in the parsed options (e.g. `debounceMs`). */
  readonly key: string;
  readonly flag: string;
  readonly env: string;
  readonly defaultValue: string | undefined;
}

type CommandLike = ReturnType<typeof serverCommand>;

function envOptions(command: CommandLike): ReadonlyMap<string, EnvOption> {
  const out = new Map<string, EnvOption>();
  for (const option of command.options) {
    if (option.envVar === undefined) continue;
    const defaultValue = option.defaultValue === undefined ? undefined : String(option.defaultValue);
    out.set(option.envVar, {
      key: option.attributeName(),
      flag: option.long ?? option.flags,
      env: option.envVar,
      defaultValue,
    });
  }
  return out;
}

/** meshrelay-server's options by environment variable. */
export const SERVER_ENV = envOptions(serverCommand());
/** meshrelay-agent's options by environment variable. */
export const AGENT_ENV = envOptions(buildAgentCommand());
