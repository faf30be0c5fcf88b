module fpsafe.dev/misc/fpcheck

go 1.27

require (
	fpsafe.dev/misc v0.0.0
	golang.org/x/arch v0.33.0
	golang.org/x/tools v0.52.0
)

require (
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
)

replace fpsafe.dev/misc => ../
