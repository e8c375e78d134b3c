# syntax=docker/dockerfile:1
# keyplane: the REST API and the ApiKey operator. Node runs the TypeScript sources directly (type
# stripping), so "building" is checking: the image is made only from sources that type-check.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci
COPY . .
RUN npm run typecheck && find src -name '*.test.ts' -delete

FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev && npm cache clean --force

FROM ${NODE_IMAGE}
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 KEYPLANE_DATA_DIR=/data
# Two malloc arenas, not eight a core: the threads' own arenas held some 25 MiB of freed memory under a
# long mix (docs/scaling.md, "Memory"). The Deployment's pods take it from here.
ENV MALLOC_ARENA_MAX=2
# Without DATABASE_URL, the embedded database and generated secrets live here: mount a volume.
RUN mkdir /data && chown 1000:1000 /data
COPY --from=prod-deps /app/node_modules ./node_modules
COPY package.json package-lock.json ./
COPY --from=build /app/src ./src
COPY migrations ./migrations
COPY crds ./crds
# The image's "node" user, by number, so that Kubernetes can check runAsNonRoot.
USER 1000:1000
EXPOSE 8080
# The heap as `npm start` sizes it: a young generation of 16 MiB (docs/adr/0011-young-generation.md),
# an old one of at most 256 MiB (docs/adr/0017-heap-size.md).
CMD ["node", "--min-semi-space-size=16", "--max-semi-space-size=16", "--max-old-space-size=256", "src/cli/main.ts", "serve"]
