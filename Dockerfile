# syntax=docker/dockerfile:1
# One image for both processes (docker-compose.yml, docs/production.md):
#   docker run IMAGE                 the worker (default command: src/worker/main.ts)
#   docker run IMAGE src/api/main.ts the api
# tini is PID 1: it forwards SIGTERM/SIGINT to node (graceful shutdown) and reaps zombies.
# TypeScript runs through tsx (a runtime dependency), so there is no compile step; the build
# stage type-checks instead, so a broken tree does not become an image.

ARG NODE_IMAGE=node:20.20.2-bookworm-slim

# --- build: every dependency (dev included), native modules built if no prebuilt binary fits.
FROM ${NODE_IMAGE} AS build
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npx tsc --noEmit
# Production dependencies only, with the native modules built above.
RUN npm prune --omit=dev --no-audit --no-fund

# --- runtime: production dependencies and the service's sources, as the unprivileged node user.
FROM ${NODE_IMAGE} AS runtime
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/* \
  && mkdir -p /var/lib/durable-sandbox \
  && chown node:node /var/lib/durable-sandbox
# JSON logs even on a terminal (pino-pretty is a dev dependency), a failed start included
# (src/process/startup-failure.ts; unset, it would be one plain line).
ENV NODE_ENV=production \
  LOG_FORMAT=json \
  DATA_DIR=/var/lib/durable-sandbox
WORKDIR /app
COPY --from=build /app/package.json /app/tsconfig.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/src src
COPY --from=build /app/contract contract
COPY --from=build /app/clients/typescript clients/typescript
COPY --from=build /app/clients/cli clients/cli
USER node
EXPOSE 8080
ENTRYPOINT ["/usr/bin/tini", "--", "node", "--import", "tsx"]
CMD ["src/worker/main.ts"]
