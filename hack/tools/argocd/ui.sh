#!/usr/bin/env bash
# Builds the web UI of one Argo CD release, as its release build does, for build.sh to embed.
#
#   hack/tools/argocd/ui.sh <version> <a writable copy of the release's ui/ directory>
#
# The UI lands in <dir>/dist/app. Argo CD's ui/ pins one dependency, argo-ui, to a commit of its
# GitHub repository; it comes from there when GitHub can be reached, else from
# $ARGOCD_VENDOR/argo-ui/argo-ui-<first 8 hex digits of the commit>.tgz (an `npm pack` of that
# commit). The script says which one it used. Everything else comes from the npm registry, with
# the package manager the release names: pnpm (3.5 and later, its packageManager field) or yarn 1.
set -euo pipefail

version=${1:?usage: ui.sh <version> <ui directory>}
ui=${2:?usage: ui.sh <version> <ui directory>}
cd "$ui"

log() { echo "argocd $version UI: [${SECONDS}s] $*" >&2; }
fail() { echo "argocd $version UI: $*" >&2; exit 1; }

command -v npx >/dev/null || fail "needs Node.js and npm (Debian: apt-get install nodejs npm), or build without the UI: ARGOCD_UI=0"

pnpm=$(sed -n 's/^ *"packageManager": "\(pnpm@[^"]*\)".*/\1/p' package.json)
if [[ -n $pnpm ]]; then
	ref=$(sed -n 's|^ *"argo-ui": "git+https://github.com/argoproj/argo-ui.git#\([0-9a-f]*\)".*|\1|p' package.json)
else
	ref=$(grep -A2 '^"argo-ui@git+https://github.com/argoproj/argo-ui.git' yarn.lock | sed -n 's|.*resolved "git+https://github.com/argoproj/argo-ui.git#\([0-9a-f]*\)".*|\1|p' || true)
fi
[[ -n $ref ]] || fail "found no argo-ui commit in ui/package.json or ui/yarn.lock"

frozen=--frozen-lockfile
if timeout 60 git ls-remote https://github.com/argoproj/argo-ui >/dev/null 2>&1; then
	log "argo-ui $ref from https://github.com/argoproj/argo-ui"
else
	tgz=${ARGOCD_VENDOR:+$ARGOCD_VENDOR/argo-ui/argo-ui-${ref:0:8}.tgz}
	[[ -n $tgz && -f $tgz ]] || fail "needs argo-ui at commit $ref, which GitHub serves and GitHub could not be reached. Set ARGOCD_VENDOR to a directory holding argo-ui/argo-ui-${ref:0:8}.tgz (npm pack of that commit)${tgz:+ (not found: $tgz)}, or build without the UI: ARGOCD_UI=0"
	sed -i 's|^\( *"argo-ui": \)"git+https://github.com/argoproj/argo-ui.git[^"]*"|\1"file:'"$tgz"'"|' package.json
	grep -q "\"argo-ui\": \"file:$tgz\"" package.json || fail "could not point ui/package.json's argo-ui at $tgz"
	if [[ -z $pnpm ]]; then
		# yarn.lock names the yarn registry's host; the npm registry serves the same tarballs.
		registry=$(npm config get registry)
		sed -i "s|https://registry.yarnpkg.com/|${registry%/}/|g" yarn.lock
	fi
	frozen=
	log "argo-ui $ref from $tgz (GitHub could not be reached)"
fi

if [[ -n $pnpm ]]; then
	log "installing its packages with $pnpm"
	npx -y "$pnpm" install ${frozen:-"--no-frozen-lockfile"} --reporter=append-only >install.log 2>&1 || { tail -n 30 install.log >&2; fail "$pnpm install failed (log: $ui/install.log)"; }
else
	log "installing its packages with yarn 1"
	npx -y yarn@1 install --ignore-engines --non-interactive ${frozen:+"--frozen-lockfile"} >install.log 2>&1 || { tail -n 30 install.log >&2; fail "yarn install failed (log: $ui/install.log)"; }
fi

log "building with webpack (a few minutes)"
find ./dist -type f -not -name gitkeep -delete
NODE_ENV=production NODE_ONLINE_ENV=online NODE_OPTIONS=--max_old_space_size=8192 \
	./node_modules/.bin/webpack --config ./src/app/webpack.config.js --mode production >build.log 2>&1 ||
	{ tail -n 30 build.log >&2; fail "webpack failed (log: $ui/build.log)"; }
[[ -f dist/app/index.html ]] || fail "webpack wrote no dist/app/index.html (log: $ui/build.log)"
log "built $ui/dist/app ($(du -sh dist/app | cut -f1))"
