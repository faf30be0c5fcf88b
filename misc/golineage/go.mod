module fpsafe.dev/misc/golineage

go 1.27

require (
	fpsafe.dev/misc v0.0.0
	github.com/cilium/ebpf v0.22.0
	github.com/google/pprof v0.0.0-20261105003125-4bf881d7fb0b
	golang.org/x/sys v0.50.0
)

require golang.org/x/arch v0.33.0 // indirect

replace fpsafe.dev/misc => ../
