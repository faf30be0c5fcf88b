package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocConfigs: every Collector configuration doc/agent.md gives (a YAML
// block with receivers and a service) is one this Collector accepts, with
// the profiles feature gate, as the doc says to run it.
func TestDocConfigs(t *testing.T) {
	doc, err := os.ReadFile("../../../doc/agent.md")
	if err != nil {
		t.Fatal(err)
	}
	var configs []string
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		if strings.Contains(m[1], "receivers:") && strings.Contains(m[1], "service:") {
			configs = append(configs, m[1])
		}
	}
	if len(configs) < 2 {
		t.Fatalf("doc/agent.md has %d Collector configurations, want the OTLP receiver's and the golineage receiver's", len(configs))
	}
	tmp := t.TempDir()
	colBin := build(t, "go", ".", filepath.Join(tmp, "otelcol-golineage"))
	for i, c := range configs {
		path := filepath.Join(tmp, "config.yaml")
		if err := os.WriteFile(path, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(colBin, "validate", "--config", path, "--feature-gates=service.profilesSupport").CombinedOutput()
		if err != nil {
			t.Errorf("configuration %d of doc/agent.md: validate: %v\n%s\n%s", i+1, err, out, c)
		}
	}
}
