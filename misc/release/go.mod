module fpsafe.dev/misc/release

go 1.27
