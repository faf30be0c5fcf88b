module fpsafe.dev/misc/workflow

go 1.27
