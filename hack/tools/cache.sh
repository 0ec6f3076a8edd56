#!/usr/bin/env bash
# Points each tool directory of bin/ at the machine's tool cache, so that a second checkout on the
# same machine builds none of them (the Makefile runs it before anything else; TOOLS_CACHE= turns it
# off and the tools live in bin/ as before).
#
#   hack/tools/cache.sh <cache> <bin> <tool>...
#
# The cache holds one directory per tool, each with one directory per version (bin/k8s/1.36.3,
# bin/argocd/v3.5.1, ...), as bin/ did: every path the Makefile, the tests and internal/assets read
# stays the same. A bin/<tool> that is already a link is left as it is. A bin/<tool> that is a
# directory (a checkout that built its tools before the cache) gives the cache each version the cache
# lacks, by a rename, and becomes the link. Two checkouts building the same missing version at the
# same moment would write the same files: build a new version in one checkout first.
set -euo pipefail

cache=$1 bin=$2
shift 2
mkdir -p "$bin"
for tool in "$@"; do
	link=$bin/$tool dir=$cache/$tool
	[[ -L $link ]] && continue
	mkdir -p "$dir"
	if [[ -d $link ]]; then
		for version in "$link"/* "$link"/.[!.]*; do
			[[ -e $version ]] || continue
			[[ -e $dir/${version##*/} ]] || mv "$version" "$dir/"
		done
		rm -rf "$link"
		echo "Moved $link into the machine's tool cache $dir" >&2
	fi
	ln -s "$dir" "$link"
done
