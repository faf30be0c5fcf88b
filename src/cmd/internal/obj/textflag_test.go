// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package obj

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestTextflagH checks that runtime/textflag.h, which assembly files
// include, agrees with the flags defined here.
func TestTextflagH(t *testing.T) {
	want := map[string]int{
		"NOPROF":        NOPROF,
		"DUPOK":         DUPOK,
		"NOSPLIT":       NOSPLIT,
		"RODATA":        RODATA,
		"NOPTR":         NOPTR,
		"WRAPPER":       WRAPPER,
		"NEEDCTXT":      NEEDCTXT,
		"TLSBSS":        TLSBSS,
		"NOFRAME":       NOFRAME,
		"REFLECTMETHOD": REFLECTMETHOD,
		"TOPFRAME":      TOPFRAME,
		"ABIWRAPPER":    ABIWRAPPER,
		"NOFPCHECK":     NOFPCHECK,
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "runtime", "textflag.h"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^#define\s+(\w+)\s+(\d+)\s*$`).FindAllSubmatch(data, -1) {
		v, _ := strconv.Atoi(string(m[2]))
		got[string(m[1])] = v
	}
	for name, v := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("textflag.h does not define %s", name)
		} else if g != v {
			t.Errorf("textflag.h defines %s as %d, cmd/internal/obj as %d", name, g, v)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("textflag.h defines %s, unknown to this test", name)
		}
	}
}
