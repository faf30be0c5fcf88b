module fpsafe/golineage

go 1.27

require (
	github.com/google/pprof v0.0.0-20261105003125-4bf881d7fb0b
	golang.org/x/sys v0.50.0
)
