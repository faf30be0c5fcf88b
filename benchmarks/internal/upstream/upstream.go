// Package upstream finds the upstream Go release the fork is compared
// against. The repository names that release in one place, its VERSION
// file (goX.Y.Z-SUFFIX), which the fork's toolchain reports as its own
// version: the release is what comes before the suffix.
package upstream

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Release is the upstream release of a fork version such as
// "go1.2.3-fpsafe1", or an error if the version has no suffix.
func Release(forkVersion string) (string, error) {
	up, suffix, ok := strings.Cut(forkVersion, "-")
	if !ok || suffix == "" || !strings.HasPrefix(up, "go") {
		return "", fmt.Errorf("toolchain version %q is not a fork's goX.Y.Z-SUFFIX", forkVersion)
	}
	return up, nil
}

// GOROOT asks gocmd for the fork's version (go env GOVERSION) and returns
// the release it is built from with that release's GOROOT, which any go
// command of 1.21 or later fetches through the module proxy
// (GOTOOLCHAIN=release go env GOROOT).
func GOROOT(gocmd string, env []string) (release, goroot string, err error) {
	cmd := exec.Command(gocmd, "env", "GOVERSION")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("%s env GOVERSION: %v", gocmd, err)
	}
	release, err = Release(strings.TrimSpace(string(out)))
	if err != nil {
		return "", "", err
	}
	cmd = exec.Command(gocmd, "env", "GOROOT")
	cmd.Env = append(withoutToolchain(env), "GOTOOLCHAIN="+release)
	cmd.Stderr = os.Stderr
	out, err = cmd.Output()
	if err != nil {
		return release, "", fmt.Errorf("finding upstream %s (GOTOOLCHAIN=%[1]s go env GOROOT): %v", release, err)
	}
	return release, strings.TrimSpace(string(out)), nil
}

func withoutToolchain(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GOTOOLCHAIN=") {
			out = append(out, kv)
		}
	}
	return out
}
