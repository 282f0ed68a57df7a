# settle worker image: also runs the one-shot migrations (see docker-compose.yml).
# Built once here: the worker runs compiled JavaScript with the pre-built workflow bundle, so a
# restarted container polls within about a second instead of compiling and bundling at every start
# (docs/deploying.md#worker-start-up).
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

# Sources and the build stay root-owned: the worker only reads them. `npm run build` writes dist/:
# the compiled worker and settle's workflow bundle (dist/workflow-bundle.js).
COPY . .
USER root
RUN npm run build
USER node

# Exec form: node gets SIGTERM directly and the Temporal SDK drains the worker on it.
CMD ["node", "dist/workers/worker.js"]
