module fpsafe.dev/misc

go 1.27

require (
	golang.org/x/arch v0.33.0
	golang.org/x/sys v0.50.0
)
