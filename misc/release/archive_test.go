package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var fixtureTime = time.Date(2026, 12, 2, 14, 8, 24, 0, time.UTC)

// The entries of a small archive laid out as cmd/distpack lays out its own.
var fixtureNames = []string{
	"go/", "go/VERSION", "go/pkg/", "go/pkg/tool/", "go/pkg/tool/linux_amd64/",
	"go/pkg/tool/linux_amd64/asm", "go/pkg/tool/linux_amd64/compile",
	"go/pkg/tool/linux_amd64/link", "go/pkg/tool/linux_amd64/vet",
	"go/src/", "go/src/x.go",
}

func writeFixtureTgz(t *testing.T, name string) {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for _, n := range fixtureNames {
		h := &tar.Header{Name: n, ModTime: fixtureTime, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(n))}
		if strings.HasSuffix(n, "/") {
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		} else if strings.Contains(n, "/tool/") {
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte(n))
		}
	}
	tw.Close()
	zw.Close()
	if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeFixtureZip(t *testing.T, name, prefix string) {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, n := range fixtureNames {
		if strings.HasSuffix(n, "/") {
			continue
		}
		n = prefix + strings.TrimPrefix(n, "go/")
		h := &zip.FileHeader{Name: n, Method: zip.Deflate, Modified: fixtureTime}
		h.SetMode(0o644)
		if strings.Contains(n, "/tool/") {
			h.SetMode(0o755)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(n))
	}
	zw.Close()
	if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fixtureAdditions(t *testing.T, dir, prefix string) []addition {
	var add []addition
	for _, c := range forkCommands {
		f := filepath.Join(dir, c)
		if err := os.WriteFile(f, []byte("binary "+c), 0o600); err != nil {
			t.Fatal(err)
		}
		add = append(add, addition{Name: prefix + "pkg/tool/linux_amd64/" + c, File: f})
	}
	return add
}

var wantToolOrder = []string{"asm", "compile", "fpcheck", "golineage", "link", "vet"}

func TestAddToTgz(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.tar.gz")
	writeFixtureTgz(t, src)
	add := fixtureAdditions(t, dir, "go/")
	out1, out2 := filepath.Join(dir, "out1.tar.gz"), filepath.Join(dir, "out2.tar.gz")
	if err := addToTgz(out1, src, add); err != nil {
		t.Fatal(err)
	}
	// The same inputs in another order give the same bytes.
	if err := addToTgz(out2, src, []addition{add[1], add[0]}); err != nil {
		t.Fatal(err)
	}
	b1, _ := os.ReadFile(out1)
	b2, _ := os.ReadFile(out2)
	if !bytes.Equal(b1, b2) {
		t.Errorf("two runs wrote different archives")
	}

	zr, err := gzip.NewReader(bytes.NewReader(b1))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names, tools []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		data, _ := io.ReadAll(tr)
		if base, ok := strings.CutPrefix(h.Name, "go/pkg/tool/linux_amd64/"); ok && base != "" {
			tools = append(tools, base)
			if slices.Contains(forkCommands, base) {
				if string(data) != "binary "+base {
					t.Errorf("%s holds %q", h.Name, data)
				}
				if h.Mode != 0o755 || !h.ModTime.Equal(fixtureTime) {
					t.Errorf("%s: mode %o time %v, want the siblings' 755 and %v", h.Name, h.Mode, h.ModTime, fixtureTime)
				}
			}
		}
	}
	if !slices.Equal(tools, wantToolOrder) {
		t.Errorf("tools in order %v, want %v", tools, wantToolOrder)
	}
	if len(names) != len(fixtureNames)+len(forkCommands) {
		t.Errorf("%d entries, want %d: %v", len(names), len(fixtureNames)+len(forkCommands), names)
	}
}

func TestAddToZip(t *testing.T) {
	dir := t.TempDir()
	const prefix = "golang.org/toolchain@v0.0.1-go1.27.3-x1.linux-amd64/"
	src := filepath.Join(dir, "in.zip")
	writeFixtureZip(t, src, prefix)
	out := filepath.Join(dir, "out.zip")
	if err := addToZip(out, src, fixtureAdditions(t, dir, prefix)); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var tools []string
	for _, f := range zr.File {
		base, ok := strings.CutPrefix(f.Name, prefix+"pkg/tool/linux_amd64/")
		if !ok {
			continue
		}
		tools = append(tools, base)
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if slices.Contains(forkCommands, base) {
			if string(data) != "binary "+base || f.Mode() != 0o755 || !f.Modified.Equal(fixtureTime) {
				t.Errorf("%s: data %q mode %v time %v", f.Name, data, f.Mode(), f.Modified)
			}
		} else if string(data) != strings.TrimPrefix(f.Name, prefix) && !strings.HasSuffix(string(data), base) {
			t.Errorf("%s: copied entry holds %q", f.Name, data)
		}
	}
	if !slices.Equal(tools, wantToolOrder) {
		t.Errorf("tools in order %v, want %v", tools, wantToolOrder)
	}
}

func TestAddToMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.tar.gz")
	writeFixtureTgz(t, src)
	add := []addition{{Name: "go/pkg/tool/linux_arm64/fpcheck", File: filepath.Join(dir, "in.tar.gz")}}
	err := addToTgz(filepath.Join(dir, "out.tar.gz"), src, add)
	if err == nil || !strings.Contains(err.Error(), "no files in go/pkg/tool/linux_arm64") {
		t.Errorf("adding to a port the archive lacks: err = %v, want one naming the directory", err)
	}
}

func TestExtractTgz(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.tar.gz")
	writeFixtureTgz(t, src)
	out := filepath.Join(dir, "x")
	if err := extractTgz(out, src); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(out, "go/pkg/tool/linux_amd64/vet"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("extracted vet: %v, %v", fi, err)
	}

	// A name leaving the directory is refused.
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "../evil", Typeflag: tar.TypeReg, Mode: 0o644})
	tw.Close()
	zw.Close()
	os.WriteFile(src, b.Bytes(), 0o644)
	if err := extractTgz(out, src); err == nil || !strings.Contains(err.Error(), "leaves") {
		t.Errorf("../evil: err = %v, want a refusal", err)
	}
}

func TestRemoveModuleCopies(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"src/a/go.mod", "src/a/_go.mod", "src/b/_go.mod", "src/go.mod"} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o777)
		os.WriteFile(filepath.Join(root, f), []byte("module x\n"), 0o644)
	}
	if err := removeModuleCopies(root); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]bool{"src/a/go.mod": true, "src/a/_go.mod": false, "src/b/_go.mod": true, "src/go.mod": true} {
		if _, err := os.Stat(filepath.Join(root, f)); (err == nil) != want {
			t.Errorf("%s: exists = %v, want %v", f, err == nil, want)
		}
	}
}
