#!/usr/bin/env bash
# make.bash builds the fork into goroot/: it fetches pristine upstream go1.27.3, lays out
# goroot/ from it plus patches/, src/ and VERSION (./fork apply), runs upstream's make.bash
# there, and installs the fork's own commands into goroot/bin.
#
# It is incremental: with no change to patches/, src/ or VERSION and a built goroot/, it only
# refreshes the fork's commands. It refuses to replace a goroot/ holding unsaved work.
set -euo pipefail
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$TOP"
WORK=${FORK_WORK:-$TOP/goroot}
export FORK_WORK=$WORK

UP=$(./fork upstream)

if ./fork _needs_apply; then
	./fork _safe
	./fork apply
fi

tree=$(git -C "$WORK" rev-parse 'HEAD^{tree}')
if [ "$(./fork _getstamp built-tree)" != "$tree" ] || [ ! -x "$WORK/bin/go" ]; then
	echo "make.bash: building $(head -n 1 "$WORK/VERSION") with GOROOT_BOOTSTRAP=$UP" >&2
	# Build in a clean environment: a GOROOT, GOPATH or GOFLAGS from the caller must not leak in.
	(
		cd "$WORK/src"
		unset GOROOT GOBIN GOFLAGS GOEXPERIMENT GOOS GOARCH GO111MODULE GOTOOLCHAIN
		GOROOT_BOOTSTRAP=$UP bash ./make.bash
	)
	./fork _stamp built-tree "$tree"
else
	echo "make.bash: $WORK is up to date ($(head -n 1 "$WORK/VERSION"))" >&2
fi

# The fork's own commands, built with the fork from the misc/ module.
(cd misc && GOTOOLCHAIN=local GOFLAGS=-mod=mod "$WORK/bin/go" build -o "$WORK/bin/" ./fpcheck ./golineage) ||
	{ echo "make.bash: building the fork's commands in misc/ failed" >&2; exit 1; }
echo "make.bash: installed fpcheck and golineage in $WORK/bin" >&2
"$WORK/bin/go" version
