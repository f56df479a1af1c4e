# The tether worker image. Commands the agent runs execute inside this container, so extend it with the
# toolchains your projects need (e.g. `FROM tether-worker` + `apt-get install golang`).

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci runs the package's prepare script, which builds only when the sources are there (not yet).
COPY scripts/prepare.mjs ./scripts/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
COPY worker.ts ./
RUN npm run build

FROM node:20-bookworm-slim
RUN apt-get update \
  && apt-get install -y --no-install-recommends git ca-certificates tini \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
COPY scripts/prepare.mjs ./scripts/
RUN npm ci --omit=dev --no-audit --no-fund
COPY --from=build /app/dist ./dist
COPY bin ./bin
# The worker never runs as root: commands the agent runs inherit this user.
RUN useradd --create-home --uid 10001 tether && mkdir -p /workspaces && chown tether /workspaces
USER tether
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/worker.js"]
