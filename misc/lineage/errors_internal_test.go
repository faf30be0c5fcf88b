package lineage

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"fpsafe.dev/misc/internal/lineageabi"
	"fpsafe.dev/misc/internal/target"
)

func TestVersionError(t *testing.T) {
	err := publicError(0, fmt.Errorf("reading the header: %w", &lineageabi.VersionError{Version: 3}))
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Found != 3 || ve.Want != ABIVersion || !errors.Is(err, ErrVersion) {
		t.Fatalf("%v: want a *VersionError{3, %d} that is ErrVersion", err, ABIVersion)
	}
	if strings.Contains(err.Error(), "-native") {
		t.Errorf("%q gives a command's advice", err)
	}
}

func TestPermissionError(t *testing.T) {
	err := publicError(1, &target.PermissionError{PID: 1, Err: syscall.EPERM})
	if !errors.Is(err, ErrPermission) {
		t.Errorf("%v is not ErrPermission", err)
	}
}
