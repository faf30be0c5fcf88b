module fpsafe.dev/misc/release

go 1.27

require golang.org/x/mod v0.42.0
