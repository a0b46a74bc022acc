# syntax=docker/dockerfile:1
# Meshrelay image: one image for the management server, the relay agent and meshctl.
#   docker build -t meshrelay/meshrelay:0.1.0 .
#   docker run meshrelay/meshrelay:0.1.0 server --help     (or: agent ..., meshctl ...)
# Node runs the TypeScript sources directly (type stripping), so there is no build step.
ARG NODE_IMAGE=node:24-bookworm-slim

# --- production dependencies of the workspace, from the lockfile ---
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/api/package.json packages/api/
COPY packages/certs/package.json packages/certs/
COPY packages/translator/package.json packages/translator/
COPY packages/xds/package.json packages/xds/
COPY packages/store/package.json packages/store/
COPY packages/kube/package.json packages/kube/
COPY packages/registry/package.json packages/registry/
COPY packages/testkit/package.json packages/testkit/
COPY packages/mgmt-server/package.json packages/mgmt-server/
COPY packages/agent/package.json packages/agent/
COPY packages/meshctl/package.json packages/meshctl/
# --omit=optional leaves out the root's bundled Node binary: the base image brings its own.
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-bin-links --no-audit --no-fund \
 && npm cache clean --force

# --- runtime ---
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    MESHRELAY_HOME=/app
RUN groupadd --system --gid 10001 meshrelay \
 && useradd --system --uid 10001 --gid meshrelay --home-dir /var/lib/meshrelay --no-create-home --shell /usr/sbin/nologin meshrelay \
 && mkdir -p /var/lib/meshrelay/server /var/lib/meshrelay/credentials /var/lib/meshrelay-agent \
 && chown -R 10001:10001 /var/lib/meshrelay /var/lib/meshrelay-agent
WORKDIR /app
# node_modules at the root and inside the packages (versions the root could not hoist).
COPY --from=deps /app /app
COPY package.json ./
COPY proto/ proto/
COPY packages/ packages/
COPY examples/ examples/
COPY --chmod=0755 deploy/docker/meshrelay.sh /usr/local/bin/meshrelay
USER 10001:10001
# 9900 relay gRPC, 8090 HTTP API + UI, 9091 metrics (server); 9977 health + metrics, 9978 access-log sink (agent).
EXPOSE 9900 8090 9091 9977 9978
ENTRYPOINT ["/usr/local/bin/meshrelay"]
CMD ["server"]
