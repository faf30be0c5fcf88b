#!/usr/bin/env bash
# release.bash builds the fork as a Go toolchain distribution in dist/: binary archives for
# linux/amd64 and linux/arm64 with fpcheck and golineage in pkg/tool/GOOS_GOARCH, the source
# archive, a GOPROXY tree of the golang.org/toolchain modules for GOTOOLCHAIN and of the reader
# SDK's module fpsafe.dev/misc, and SHA256SUMS.
# Two runs from the same commit give byte-identical files. See doc/install.md.
#
# Flags are passed to misc/release (run ./release.bash -h); the work happens there, in Go.
set -euo pipefail
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
UP=$("$TOP/fork" upstream)
cd "$TOP/misc/release"
GOTOOLCHAIN=local GOFLAGS=-mod=readonly exec nice "$UP/bin/go" run . -top "$TOP" -upstream "$UP" "$@"
