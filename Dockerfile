# ragdolld in a container: build on Debian 12, run on debian:bookworm-slim.
#
#   docker build -t ragdolld .
#   docker run --rm -p 8080:8080 -v "$PWD/tokens:/run/secrets/ragdolld/tokens:ro" \
#       -e RAGDOLLD_AUTH_FILE=/run/secrets/ragdolld/tokens ragdolld --anonymous viewer
#   # then open http://localhost:8080/#token=TOKEN (or without one, to watch)
#
# The server binds 0.0.0.0 inside the container (its loopback is not
# reachable from outside), so it needs an auth file: lines of
# "TOKEN ROLE [WORLD ...]" (README, "Exposing ragdolld"), mounted read-only
# and named by RAGDOLLD_AUTH_FILE (or --auth-file). Without one it refuses
# to start; `docker run ... ragdolld --insecure` runs it open, for a machine
# only you reach. GET /healthz answers 200 while it runs (the image's
# HEALTHCHECK asks it); `ragdollctl` is in the image too:
#   docker exec CONTAINER ragdollctl --token TOKEN list
# The viewer, skeletons and world templates are under /usr/local/share/ragdolld,
# where the installed ragdolld looks without flags.
#
# The build stage builds no tests: scripts/test.sh runs them, and
# tests/image/check.sh builds this file with podman and checks the image
# (HEALTHCHECK, ragdollctl, the viewer and templates found inside).

FROM debian:bookworm AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config nodejs npm ca-certificates \
      libuv1-dev libwslay-dev libcjson-dev libhttp-parser-dev nettle-dev zlib1g-dev libcurl4-openssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# three.js for the viewer (Node 18 from Debian is enough: no bundler).
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --loglevel=error
COPY . .
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
      -DRD_WEB_ROOT_DEFAULT=/usr/local/share/ragdolld/web \
      -DRD_ASSETS_DEFAULT=/usr/local/share/ragdolld/assets \
      -DRD_TEMPLATES_DEFAULT=/usr/local/share/ragdolld/templates \
      -DRD_BUILD_TESTS=OFF -DRD_BUILD_BENCH=OFF \
 && cmake --build build -j"$(nproc)" \
 && cmake --install build --prefix /usr/local

FROM debian:bookworm-slim
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libuv1 libwslay1 libcjson1 libhttp-parser2.9 libnettle8 zlib1g libcurl4 curl \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/ragdolld /usr/local/bin/ragdollctl /usr/local/bin/
COPY --from=build /usr/local/share/ragdolld /usr/local/share/ragdolld
# nobody:nogroup, numeric so Kubernetes' runAsNonRoot can verify it.
USER 65534:65534
EXPOSE 8080
# Docker's own check (Kubernetes uses the probes in deploy/ instead): the
# port of CMD's --port; give your own HEALTHCHECK if you change it.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD curl -fsS -o /dev/null http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["/usr/local/bin/ragdolld", "--host", "0.0.0.0"]
CMD ["--port", "8080"]
