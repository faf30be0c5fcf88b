module fpsafe.dev/misc/fork

go 1.27
