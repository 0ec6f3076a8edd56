#!/usr/bin/env bash
# Runs every Go fuzz target of the module, one after the other, each for FUZZTIME (go test's
# -fuzztime: a duration such as 30s or 2h, or a count such as 100000x). New inputs that fail are
# written by go test to the package's testdata/fuzz/<target>/, where `go test` then runs them as
# ordinary test cases: commit them with the fix. -short: the fuzzers need no apiserver (each fuzz
# worker runs TestMain, which would start one).
set -euo pipefail
fuzztime=${FUZZTIME:-30s}
cd "$(dirname "$0")/../.."
# Packages to fuzz: the arguments, or every package with a fuzz target.
packages=${*:-$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u)}
for pkg in $packages; do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz'); do
		echo "== $pkg $target ($fuzztime)"
		go test -short -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
	done
done
