package gobin

import (
	"errors"
	"fmt"
)

// The reader's error vocabulary. Every error Open returns wraps exactly one
// of the kinds below (and ErrNotGo for the two that mean "this is no Go
// executable"), so that every tool built on this package says the same one
// line for the same bad input: "PATH: KIND: DETAIL".
var (
	// ErrNotGo is wrapped by ErrNotELF and ErrNoPclntab: the file is not a
	// Go executable at all.
	ErrNotGo = errors.New("not a Go binary")
	// ErrNotELF: the file does not start with the ELF magic.
	ErrNotELF = errors.New("not an ELF file")
	// ErrNoPclntab: an ELF file without a Go function table.
	ErrNoPclntab = errors.New("no Go pclntab")
	// ErrBadELF: the ELF headers themselves are damaged or truncated.
	ErrBadELF = errors.New("bad ELF file")
	// ErrUnsupported: a well-formed file this reader does not handle (another
	// architecture, a 32-bit or big-endian file, a pre-Go 1.20 pclntab).
	ErrUnsupported = errors.New("unsupported")
	// ErrCorrupt: a Go pclntab or module data that contradicts itself.
	ErrCorrupt = errors.New("corrupt Go pclntab")
)

// hint says what to do, per kind, after the detail.
var hint = map[error]string{
	ErrBadELF:  "the file is damaged or was cut short; copy or rebuild it",
	ErrCorrupt: "the file is damaged; copy or rebuild it",
}

// openError builds the one-line error for path: kind, then the detail.
func openError(path string, kind error, format string, args ...any) error {
	detail := fmt.Sprintf(format, args...)
	if h := hint[kind]; h != "" {
		detail += " (" + h + ")"
	}
	switch kind {
	case ErrNotELF, ErrNoPclntab:
		return fmt.Errorf("%s: %w: %w: %s", path, ErrNotGo, kind, detail)
	case ErrUnsupported:
		// Reads as one phrase: "unsupported architecture EM_RISCV".
		return fmt.Errorf("%s: %w %s", path, kind, detail)
	}
	return fmt.Errorf("%s: %w: %s", path, kind, detail)
}
