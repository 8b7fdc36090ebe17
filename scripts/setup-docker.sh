#!/usr/bin/env bash
# Start a Docker engine with BuildKit (buildx) when none answers, and a local registry on
# 127.0.0.1:5000. Idempotent: does nothing that is already done. Needs root and Debian apt.
# Facts (DESIGN.md, measured): Debian's docker.io (Engine 20.10) runs here; BuildKit needs the
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

if ! curl -fsS http://127.0.0.1:5000/v2/ >/dev/null 2>&1; then
  log "starting the local registry on 127.0.0.1:5000"
  cfg=/etc/docker/registry/config.yml
  if [ -f "$cfg" ]; then
    sed -i 's/^\(\s*addr:\).*/\1 127.0.0.1:5000/' "$cfg"
  fi
  nohup docker-registry serve "$cfg" >/var/log/docker-registry.log 2>&1 &
  for _ in $(seq 1 30); do curl -fsS http://127.0.0.1:5000/v2/ >/dev/null 2>&1 && break; sleep 1; done
fi
log "ready: $(docker version --format '{{.Server.Version}}') buildx $(docker buildx version | awk '{print $2}')"
