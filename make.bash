#!/usr/bin/env bash
# make.bash builds the fork into goroot/: it fetches the pristine upstream release that
# VERSION names, lays out goroot/ from it plus the series (patches/series, patches/, src/,
# VERSION) as a plain tree, and runs upstream's make.bash there. It is incremental (nothing is rebuilt when nothing
# changed) and refuses to replace a goroot/ holding unsaved work. The work is done by
# ./fork make; see doc/workflow.md. ./fork tools installs fpcheck and golineage into
# goroot/bin (left out here: built cold, they would cost 7% of the build).
exec "$(dirname "$0")/fork" make "$@"
