# settle worker image: also runs the one-shot migrations (see docker-compose.yml).
# No build step: tsx runs the TypeScript sources, and the worker bundles the workflow code at start.
FROM node:24-bookworm-slim

# bubblewrap: the sandbox the shell tool will run commands in.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*

ENV NODE_ENV=production
WORKDIR /app
# /workspaces: the trajectories' workspace directories (a volume in docker-compose.yml); the
# worker edits files there as `node`.
RUN chown node:node /app && mkdir /workspaces /runs && chown node:node /workspaces /runs
USER node

# Dependencies first, so a source change does not reinstall them. Dev dependencies included
# (NODE_ENV=production would omit them): tsx, and the Temporal SDK that the packed package takes
# as peer dependencies, are dev dependencies of the checkout. The image's npm 10 ignores
# package.json's `allowScripts` (an npm 11 field) and runs the install scripts, which esbuild
# and @swc/core need.
COPY --chown=node:node package.json package-lock.json ./
RUN npm ci --include=dev --no-audit --no-fund && npm cache clean --force

# Sources stay root-owned: the worker only reads them.
COPY . .

# Exec form: node gets SIGTERM directly and the Temporal SDK drains the worker on it.
CMD ["node", "--import", "tsx", "workers/worker.ts"]
