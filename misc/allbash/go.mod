module fpsafe.dev/misc/allbash

go 1.27

require fpsafe.dev/misc v0.0.0

replace fpsafe.dev/misc => ../
