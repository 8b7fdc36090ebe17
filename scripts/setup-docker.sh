#!/usr/bin/env bash
# Start a Docker engine with BuildKit (buildx) when none answers, and a local registry (no auth) on
# 127.0.0.1:5000. Idempotent: does nothing that is already done. Needs root and Debian apt.
# Facts (docs/design.md, measured): Debian's docker.io (Engine 20.10) runs here; BuildKit needs the
# buildx plugin, taken from trixie's docker-buildx .deb, which installs on bookworm.
set -euo pipefail

log() { echo "setup-docker: $*" >&2; }

if ! command -v dockerd >/dev/null 2>&1; then
  log "installing docker.io"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap docker-registry >/dev/null
fi
for pkg in debootstrap docker-registry; do
  dpkg -s "$pkg" >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null
done

if ! docker buildx version >/dev/null 2>&1; then
  log "installing trixie's docker-buildx"
  tmp=$(mktemp -d)
  cat > "$tmp/trixie.sources" <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  mkdir -p "$tmp/lists/partial"
  apt-get -o Dir::Etc::sourcelist="$tmp/trixie.sources" -o Dir::Etc::sourceparts=/dev/null \
    -o Dir::State::Lists="$tmp/lists" -o Acquire::Check-Valid-Until=false update -qq
  (cd "$tmp" && apt-get -o Dir::Etc::sourcelist="$tmp/trixie.sources" -o Dir::Etc::sourceparts=/dev/null \
    -o Dir::State::Lists="$tmp/lists" download docker-buildx)
  dpkg -i "$tmp"/docker-buildx_*.deb
  rm -rf "$tmp"
fi

if ! docker info >/dev/null 2>&1; then
  log "starting dockerd"
  nohup dockerd >/var/log/dockerd.log 2>&1 &
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { log "dockerd did not answer within 60 s; see /var/log/dockerd.log"; exit 1; }
fi

# The local registry: our own config (no auth, 127.0.0.1:5000 only, storage under
# /var/lib/rocmig-registry), not Debian's default /etc/docker/registry/config.yml, which wants htpasswd.
REGISTRY_CONFIG=/etc/rocmig/registry.yml
mkdir -p /etc/rocmig /var/lib/rocmig-registry
cat > "$REGISTRY_CONFIG.tmp" <<'YML'
# Written by scripts/setup-docker.sh: rocmig's local registry (no auth; loopback only).
version: 0.1
log:
  fields:
    service: rocmig-registry
storage:
  filesystem:
    rootdirectory: /var/lib/rocmig-registry
  delete:
    enabled: true
http:
  addr: 127.0.0.1:5000
YML
mv "$REGISTRY_CONFIG.tmp" "$REGISTRY_CONFIG"
code=$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:5000/v2/ || true)
if [ "$code" = "000" ]; then
  log "starting the local registry on 127.0.0.1:5000 ($REGISTRY_CONFIG)"
  nohup docker-registry serve "$REGISTRY_CONFIG" >/var/log/rocmig-registry.log 2>&1 &
  for _ in $(seq 1 30); do curl -fsS http://127.0.0.1:5000/v2/ >/dev/null 2>&1 && break; sleep 1; done
  curl -fsS http://127.0.0.1:5000/v2/ >/dev/null || { log "registry did not answer; see /var/log/rocmig-registry.log"; exit 1; }
elif [ "$code" != "200" ]; then
  # Something else holds the port (e.g. a registry started with Debian's htpasswd config): say so, leave it.
  log "127.0.0.1:5000 answers HTTP $code, not an open registry: stop that process" \
      "($(pgrep -af 'docker-registry serve' | head -1)) and re-run to start $REGISTRY_CONFIG"
fi
log "ready: $(docker version --format '{{.Server.Version}}') buildx $(docker buildx version | awk '{print $2}')"
