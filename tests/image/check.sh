#!/usr/bin/env bash
# Builds the Dockerfile with podman and checks the image as a user of it
# would (issue 12): the image builds; ragdolld inside finds its viewer,
# skeletons and world templates without flags; ragdollctl runs inside and
# talks to it; the image's own HEALTHCHECK fails while no server is up and
# passes once one is.
#
#   tests/image/check.sh [STORE]    (as root; scripts/test.sh runs it)
#
# STORE (default build-image/) holds podman's image store for this test
# only, so it never touches the machine's own images; a second run reuses
# its layers. These machines reach Debian's mirrors and npm but no
# container registry, so the base images the Dockerfile names
# (debian:bookworm, debian:bookworm-slim) are made here once with
# debootstrap and tagged under those names; with a registry, `podman
# build .` pulls the real ones and needs none of this. The sandboxes this
# runs in allow neither `podman run` nor network namespaces: the build uses
# --isolation=chroot and the checks `buildah run`, which share the host's
# network, so the server inside listens on the host's port 8080 (the port
# of the image's CMD and HEALTHCHECK), which must be free.
set -euo pipefail
cd "$(dirname "$0")/../.."
store=$(realpath -m "${1:-build-image}")
mkdir -p "$store"
podman=(podman --root "$store/root" --runroot "$store/run" --storage-driver overlay)
buildah=(buildah --root "$store/root" --runroot "$store/run" --storage-driver overlay)
image=localhost/ragdolld:check
port=8080

fail() { echo "image check: FAIL: $*" >&2; exit 1; }
step() { echo "image check: $*"; }

# -- base images ------------------------------------------------------------
if ! "${podman[@]}" image exists debian:bookworm-slim; then
  step "making debian:bookworm(-slim) with debootstrap (no registry here)"
  rootfs=$(mktemp -d)
  debootstrap --variant=minbase bookworm "$rootfs" >"$store/debootstrap.log" 2>&1 ||
    { tail -20 "$store/debootstrap.log" >&2; fail "debootstrap"; }
  # The host's apt sources (its mirror) inside, as Debian's images carry theirs.
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    cp /etc/apt/sources.list.d/debian.sources "$rootfs/etc/apt/sources.list.d/"
    rm -f "$rootfs/etc/apt/sources.list"
  fi
  tar -C "$rootfs" -c . | "${podman[@]}" import - debian:bookworm-slim >/dev/null
  "${podman[@]}" tag debian:bookworm-slim debian:bookworm
  rm -rf "$rootfs"
fi

# -- build ------------------------------------------------------------------
# The host's CA bundle is lent to the build only (not baked into the image):
# where HTTPS goes through a proxy with its own CA, npm inside needs it.
# It goes beside the image's own bundle, not over it: the build installs
# ca-certificates, which rewrites that file.
ca=/etc/ssl/certs/ca-certificates.crt
npmrc="$store/npmrc"
printf 'cafile=/host-ca.crt\n' >"$npmrc"
step "podman build (docker format, which keeps HEALTHCHECK)"
start=$(date +%s)
"${podman[@]}" build --pull=never --isolation=chroot --format docker --layers \
  -v "$ca:/host-ca.crt:ro" -v "$npmrc:/etc/npmrc:ro" -t "$image" . >"$store/build.log" 2>&1 ||
  { tail -40 "$store/build.log" >&2; fail "podman build (log: $store/build.log)"; }
step "built in $(($(date +%s) - start)) s"

# -- the image's configuration ----------------------------------------------
# podman shows the docker format's healthcheck beside .Config, not in it.
config=$("${podman[@]}" image inspect "$image")
eval "$(node -e '
  const [all] = JSON.parse(process.argv[1]);
  const c = { ...all.Config, Healthcheck: all.Healthcheck ?? all.HealthCheck ?? all.Config?.Healthcheck };
  const q = (s) => "\x27" + String(s).replaceAll("\x27", "\x27\\\x27\x27") + "\x27";
  const hc = c.Healthcheck ?? {};
  const test = hc.Test ?? [];
  let cmd = "";
  if (test[0] === "CMD-SHELL") cmd = test[1];
  else if (test[0] === "CMD") cmd = test.slice(1).map(q).join(" ");
  console.log("health_cmd=" + q(cmd));
  console.log("run_argv=(" + [...(c.Entrypoint ?? []), ...(c.Cmd ?? [])].map(q).join(" ") + ")");
  console.log("user=" + q(c.User ?? ""));
  console.log("exposed=" + q(Object.keys(c.ExposedPorts ?? {}).join(",")));
' "$config")"
[ -n "$health_cmd" ] || fail "the image has no HEALTHCHECK"
[ "$user" = "65534:65534" ] || fail "the image runs as '$user', not 65534:65534 (nobody)"
[ "$exposed" = "$port/tcp" ] || fail "the image exposes '$exposed', not $port/tcp"
step "HEALTHCHECK: $health_cmd"
step "runs as: ${run_argv[*]}"

c=$("${buildah[@]}" from --pull-never --name ragdolld-image-check "$image" 2>/dev/null ||
  { "${buildah[@]}" rm ragdolld-image-check >/dev/null 2>&1; "${buildah[@]}" from --pull-never --name ragdolld-image-check "$image"; })
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  "${buildah[@]}" rm "$c" >/dev/null 2>&1 || true
}
trap cleanup EXIT
inside() { "${buildah[@]}" run --isolation chroot "$c" -- "$@"; }

# -- the tools inside -------------------------------------------------------
inside ragdolld --version | grep -q '^ragdolld ' || fail "ragdolld --version inside"
inside ragdollctl --version | grep -q 'ragdollctl' || fail "ragdollctl --version inside"
inside id -u | grep -qx 65534 || fail "buildah run is not running as the image's user"

# -- HEALTHCHECK with no server: it must fail ------------------------------
if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
  fail "port $port is taken on this machine; the check needs it (the image's CMD and HEALTHCHECK use it)"
fi
if inside /bin/sh -c "$health_cmd" >/dev/null 2>&1; then
  fail "the HEALTHCHECK passes with no server up"
fi

# -- the server as the image runs it, open (no auth file here) -------------
"${buildah[@]}" run --isolation chroot "$c" -- "${run_argv[@]}" --insecure >"$store/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
  curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$store/server.log" >&2; fail "the server inside exited"; }
  sleep 0.1
done
inside /bin/sh -c "$health_cmd" || { cat "$store/server.log" >&2; fail "the HEALTHCHECK fails with the server up"; }
step "HEALTHCHECK passes with the server up"

# The viewer, found without --web-root: its page and three.js.
page=$(curl -fsS "http://127.0.0.1:$port/") || fail "GET / (the viewer)"
grep -q '<title>' <<<"$page" || fail "GET / is not the viewer's page"
curl -fsS -o /dev/null "http://127.0.0.1:$port/vendor/three/three.module.js" || fail "GET three.js from the viewer's vendor/"
step "the viewer is served without flags"

# ragdollctl inside, against the server inside: the demo world (skeletons
# found without --assets) and a world from a shipped template (templates
# found without --templates).
inside ragdollctl list | grep -q demo || fail "ragdollctl list inside does not show the demo world"
inside ragdollctl --json create from-template --template arena >"$store/create.json" ||
  { cat "$store/create.json" >&2; fail "ragdollctl create --template arena inside"; }
world=$(node -e 'console.log(JSON.parse(process.argv[1]).world)' "$(cat "$store/create.json")")
inside ragdollctl list | grep -q from-template || fail "the world made from the arena template is not listed"
inside ragdollctl spawn character "$world" --position 2,0,2 --skeleton humanoid >/dev/null ||
  fail "spawning a humanoid (the image's skeletons) inside"
step "ragdollctl inside: list, create --template arena, spawn character"

kill "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=""
grep -q 'level=error' "$store/server.log" && { cat "$store/server.log" >&2; fail "the server logged an error"; }
echo "image check: passed ($image, $("${podman[@]}" image inspect --format '{{.Size}}' "$image") bytes)"
