package main

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"testing"

	"fpsafe.dev/misc/internal/lineageabi"
)

// TestGDBConstantsMatchGo: the gdb extension is Python and has its own
// lineage ABI reader; the header layout it knows must be the Go reader's.
func TestGDBConstantsMatchGo(t *testing.T) {
	src, err := os.ReadFile("gdb/golineage.py")
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z][A-Z0-9_]*) = (.*?)(?:\s+#.*)?$`).FindAllSubmatch(src, -1) {
		consts[string(m[1])] = string(m[2])
	}
	want := map[string]int{
		"VERSION":            lineageabi.Version,
		"HEADER_SIZE":        lineageabi.HeaderSize,
		"OFF_VERSION":        lineageabi.OffVersion,
		"OFF_SELF":           lineageabi.OffSelf,
		"OFF_MAX_DEPTH":      lineageabi.OffMaxDepth,
		"OFF_TABLE":          lineageabi.OffRegionSize,
		"TABLE_U32":          (lineageabi.OffGRecord-lineageabi.OffRegionSize)/4 + 1,
		"OFF_TEXT_BASE":      lineageabi.OffTextBase,
		"OFF_REG_TABLE":      lineageabi.OffRegTable,
		"REG_TABLE_U32":      (lineageabi.OffStatusScan-lineageabi.OffRegTable)/4 + 1,
		"OFF_STATUS_MAP":     lineageabi.OffStatusMap,
		"FLAG_READY":         lineageabi.FlagReady,
		"REC_CGO_CALLBACK":   lineageabi.RecCgoCallback,
		"REC_PARENT_UNKNOWN": lineageabi.RecParentUnknown,
		"FLAG_REGISTRY":      lineageabi.FlagRegistry,
	}
	for name, w := range want {
		v, ok := consts[name]
		if !ok {
			t.Errorf("gdb/golineage.py defines no %s", name)
			continue
		}
		if got, err := strconv.ParseInt(v, 0, 64); err != nil || got != int64(w) {
			t.Errorf("gdb/golineage.py: %s = %s, the Go reader's is %d", name, v, w)
		}
	}
	// A Python bytes literal of \x escapes reads the same as a Go string.
	magic, err := strconv.Unquote(regexp.MustCompile(`^b(".*")$`).ReplaceAllString(consts["MAGIC"], "$1"))
	if err != nil || !bytes.Equal([]byte(magic), lineageabi.Magic) {
		t.Errorf("gdb/golineage.py: MAGIC = %s (%v), the Go reader's is % x", consts["MAGIC"], err, lineageabi.Magic)
	}
}
