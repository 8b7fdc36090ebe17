#!/usr/bin/env bash
# Make sure what `make images` / `make test` need is there: a Docker engine that answers, the buildx
# plugin, debootstrap (and, with --registry, Debian's docker-registry for the registry tests).
# When something is missing: as root on Debian, run scripts/setup-docker.sh (installs and starts it);
# otherwise print the exact command to run and exit 3 (README "Exit codes": no Docker engine or buildx).
set -euo pipefail
cd "$(dirname "$0")/.."

need_registry=0
[ "${1:-}" = "--registry" ] && need_registry=1

missing=()
docker info >/dev/null 2>&1 || missing+=("a Docker engine that answers")
docker buildx version >/dev/null 2>&1 || missing+=("the docker buildx plugin")
command -v debootstrap >/dev/null 2>&1 || missing+=("debootstrap")
if [ "$need_registry" = 1 ]; then
  command -v docker-registry >/dev/null 2>&1 || missing+=("docker-registry")
fi
[ "${#missing[@]}" -eq 0 ] && exit 0

what=$(IFS=,; echo "${missing[*]}" | sed 's/,/, /g')
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-docker: missing: $what; running scripts/setup-docker.sh" >&2
  exec scripts/setup-docker.sh
fi
echo "ensure-docker: missing: $what." >&2
echo "ensure-docker: run \`sudo scripts/setup-docker.sh\` (Debian: installs docker.io, docker-buildx," \
     "debootstrap, docker-registry and starts dockerd), or start your Docker engine (\`sudo systemctl start docker\`)" \
     "and add yourself to the docker group." >&2
exit 3
