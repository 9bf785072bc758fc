#!/usr/bin/env bash
# toolcache.sh MODULE BIN NAME... -- COMMAND...
#
# Builds third-party binaries once per machine rather than once per clone. COMMAND (a go build run in the
# wrapper module MODULE, writing the binaries NAME... into BIN) is run only when TOOLS_CACHE holds no result of
# the same build: the same command, the same go.mod and go.sum, the same Go. A fresh clone's bin/ is empty, and
# relinking twenty binaries from the Go build cache took 2.5 minutes of every CI run; copying them takes seconds.
# The key holds every input of the build (the modules' sums pin every source), so a version bump, a changed
# flag or a new Go builds again. TOOLS_CACHE empty turns the cache off.
set -euo pipefail

module=$1 bin=$2
shift 2
names=()
while [[ $# -gt 0 && $1 != -- ]]; do
	names+=("$1")
	shift
done
[[ $# -gt 0 ]] || { echo "toolcache.sh: no -- before the command" >&2; exit 2; }
shift

build() { (cd "$module" && "$@"); }
mkdir -p "$bin"
if [[ -z ${TOOLS_CACHE:-} ]]; then
	build "$@"
	exit
fi

# The output directory differs from clone to clone and is no input of the build: it is left out of the key.
command=$*
key=$({
	go env GOVERSION GOOS GOARCH GOAMD64 GOFLAGS CGO_ENABLED CGO_CFLAGS
	cat "$module/go.mod" "$module/go.sum"
	echo "${command//$bin/BIN}"
} | sha256sum | cut -c1-32)
entry=$TOOLS_CACHE/$key

if [[ -f $entry/complete ]]; then
	for n in "${names[@]}"; do
		cp --reflink=auto "$entry/$n" "$bin/$n.tmp" && mv -f "$bin/$n.tmp" "$bin/$n"
	done
	echo ">> copied ${names[*]} from $entry" >&2
	exit
fi

build "$@"
# Stored through a directory of its own, renamed into place: a build cut short never leaves a partial entry.
mkdir -p "$TOOLS_CACHE"
staging=$(mktemp -d "$TOOLS_CACHE/.staging.XXXXXX")
for n in "${names[@]}"; do
	cp --reflink=auto "$bin/$n" "$staging/$n"
done
touch "$staging/complete"
mv -T "$staging" "$entry" 2>/dev/null || rm -rf "$staging" # another build stored it first
