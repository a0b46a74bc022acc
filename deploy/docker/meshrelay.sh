#!/bin/sh
# Entrypoint of the Meshrelay image: the first argument chooses the binary.
#   server [flags]   meshrelay-server (the default command)
#   agent [flags]    meshrelay-agent
#   meshctl [args]   the CLI
#   -...             flags alone go to the server
#   anything else    runs as given (e.g. sh -c '...')
# exec hands PID 1 to node, so SIGTERM reaches the process that drains.
set -eu
home="${MESHRELAY_HOME:-/app}"
cmd="${1:-server}"
[ "$#" -gt 0 ] && shift
case "$cmd" in
  server) exec node "$home/packages/mgmt-server/bin/meshrelay-server.js" "$@" ;;
  agent) exec node "$home/packages/agent/bin/meshrelay-agent.js" "$@" ;;
  meshctl) exec node "$home/packages/meshctl/bin/meshctl.js" "$@" ;;
  -*) exec node "$home/packages/mgmt-server/bin/meshrelay-server.js" "$cmd" "$@" ;;
  *) exec "$cmd" "$@" ;;
esac
