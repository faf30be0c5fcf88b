package target

import (
	"os"
	"strings"
	"testing"
)

func TestReadVDSOSelf(t *testing.T) {
	v, err := ReadVDSO(os.Getpid(), ProcMem(os.Getpid()))
	if err != nil {
		t.Skip(err) // a kernel without a vDSO
	}
	found := false
	for _, s := range v.Funcs {
		if !v.Contains(s.Addr) || v.Func(s.Addr) != s.Name {
			t.Errorf("%s at %#x: Contains %v, Func %q", s.Name, s.Addr, v.Contains(s.Addr), v.Func(s.Addr))
		}
		found = found || strings.Contains(s.Name, "clock_gettime")
	}
	if !found {
		t.Errorf("no clock_gettime among the vDSO's functions %v", v.Funcs)
	}
	if v.Func(v.Start-1) != "" || v.Func(v.Limit) != "" {
		t.Errorf("Func names addresses outside the vDSO")
	}
}

// FuzzParseVDSO: a vDSO image of any bytes gives an error or functions
// inside the image, never a panic.
func FuzzParseVDSO(f *testing.F) {
	if start, limit, err := vdsoRange(os.Getpid()); err == nil {
		img := make([]byte, limit-start)
		if ProcMem(os.Getpid()).ReadAt(img, start) == nil {
			f.Add(img)
		}
	}
	f.Add([]byte("\x7fELF"))
	f.Fuzz(func(t *testing.T, img []byte) {
		v, err := ParseVDSO(img, 0x10000)
		if err != nil {
			return
		}
		for _, s := range v.Funcs {
			if !v.Contains(s.Addr) {
				t.Errorf("%s at %#x outside [%#x, %#x)", s.Name, s.Addr, v.Start, v.Limit)
			}
		}
	})
}
