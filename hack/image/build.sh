#!/usr/bin/env bash
# Builds the controller image (make image): cross-compiles a static argocd-pull per platform into
# bin/image/<os>_<arch>/ and builds the Containerfile on that directory with podman, or docker
# buildx when podman is not installed. Podman keeps every platform under one manifest list named
# IMAGE; docker buildx needs PUSH=1 for more than one platform (its local store holds one).
#
# Environment: IMAGE (the reference), PLATFORMS ("linux/amd64 linux/arm64"), VERSION, REVISION,
# LDFLAGS (the -X flags that stamp them into the binary), CONTAINER_TOOL (podman|docker), PUSH.
set -euo pipefail

: "${IMAGE:?IMAGE is required}" "${VERSION:?VERSION is required}" "${REVISION:=unknown}"
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64}
root=$(cd "$(dirname "$0")/../.." && pwd)
context=$root/bin/image

if [[ -z ${CONTAINER_TOOL:-} ]]; then
	if command -v podman >/dev/null; then
		CONTAINER_TOOL=podman
	elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then
		CONTAINER_TOOL=docker
	else
		echo "make image needs podman (Debian: apt-get install podman) or a running Docker engine" >&2
		exit 1
	fi
fi

rm -rf "$context"
platforms=()
for p in $PLATFORMS; do
	os=${p%%/*} arch=${p#*/}
	echo "Building argocd-pull $VERSION for $os/$arch" >&2
	(cd "$root" && CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "-s -w ${LDFLAGS:-}" \
		-o "$context/${os}_${arch}/argocd-pull" ./cmd/argocd-pull)
	platforms+=("$p")
done
joined=$(IFS=,; echo "${platforms[*]}")
args=(--file "$root/Containerfile" --platform "$joined"
	--build-arg "VERSION=$VERSION" --build-arg "REVISION=$REVISION"
	--build-arg "CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ)")

case $CONTAINER_TOOL in
podman)
	# A manifest list of the same name would gain a second entry per platform: start afresh, and
	# remove the previous build's platform images with it (podman manifest rm leaves them behind).
	repository=${IMAGE%@*}
	[[ ${repository##*/} == *:* ]] && repository=${repository%:*}
	for digest in $(podman manifest inspect "$IMAGE" 2>/dev/null | grep -o 'sha256:[0-9a-f]\{64\}' || true); do
		id=$(podman image inspect --format "{{.Id}}" "$repository@$digest" 2>/dev/null) && podman rmi "$id" >/dev/null 2>&1 || true
	done
	podman manifest rm "$IMAGE" >/dev/null 2>&1 || podman rmi "$IMAGE" >/dev/null 2>&1 || true
	# --layers=false: no intermediate image per instruction (podman 4.3 then fails to list images).
	podman build --quiet --layers=false "${args[@]}" --manifest "$IMAGE" "$context" >/dev/null
	if [[ -n ${PUSH:-} ]]; then
		podman manifest push --all "$IMAGE" "docker://$IMAGE"
	fi
	;;
docker)
	if [[ -n ${PUSH:-} ]]; then
		docker buildx build "${args[@]}" --tag "$IMAGE" --push "$context"
	elif [[ ${#platforms[@]} -gt 1 ]]; then
		echo "docker's local image store holds one platform: set PLATFORMS=linux/$(go env GOARCH), or PUSH=1" >&2
		exit 1
	else
		docker buildx build "${args[@]}" --tag "$IMAGE" --load "$context"
	fi
	;;
*)
	echo "CONTAINER_TOOL must be podman or docker, not $CONTAINER_TOOL" >&2
	exit 1
	;;
esac
echo "$IMAGE ($joined)"
