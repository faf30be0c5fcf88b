package main

// The reader SDK: the module fpsafe.dev/misc (misc/ without the commands'
// nested modules: the package fpsafe.dev/misc/lineage, the internal packages
// it reads with, and the C header misc/lineage/include/golineage_abi.h),
// published into the GOPROXY tree beside the toolchain modules at the version
// misc/lineage/VERSION names, so that a module outside the repository can
//
//	GOPROXY=file://DIST/proxy,https://proxy.golang.org,direct GONOSUMDB=fpsafe.dev \
//		go get fpsafe.dev/misc/lineage@VERSION
//
// The module zip holds what git tracks under misc/ (and, with -dirty, the
// untracked files it does not ignore), filtered by the go command's rules
// (golang.org/x/mod/zip: no nested modules, no vendor directories), with
// every entry at the release's VERSION time, as cmd/distpack's toolchain
// modules have it; the .info file has the same time.

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
)

const (
	sdkModule = "fpsafe.dev/misc"
	sdkDir    = "misc"                            // the module's directory in the repository
	sdkHeader = "lineage/include/golineage_abi.h" // in the module; the zip must hold it
	// sdkVersionFile holds the SDK's version, its one source (doc/install.md).
	sdkVersionFile = "misc/lineage/VERSION"
)

// readSDKVersion reads the SDK's version from top's misc/lineage/VERSION: one
// line, a canonical semantic version (v0.1.0) that the module path allows
// (v0 or v1: a v2 would need the path fpsafe.dev/misc/v2).
func readSDKVersion(top string) (string, error) {
	data, err := os.ReadFile(filepath.Join(top, filepath.FromSlash(sdkVersionFile)))
	if err != nil {
		return "", fmt.Errorf("reading the SDK's version: %w", err)
	}
	v := strings.TrimSpace(string(data))
	if !semver.IsValid(v) || semver.Canonical(v) != v {
		return "", fmt.Errorf("%s: %q is not a semantic version such as v0.1.0", sdkVersionFile, v)
	}
	if err := module.Check(sdkModule, v); err != nil {
		return "", fmt.Errorf("%s: %w", sdkVersionFile, err)
	}
	return v, nil
}

// sdkFile is a file of the module, read from the work tree.
type sdkFile struct {
	path string // slash-separated, relative to the module's directory
	file string // on disk
	info os.FileInfo
}

func (f sdkFile) Path() string                 { return f.path }
func (f sdkFile) Lstat() (os.FileInfo, error)  { return f.info, nil }
func (f sdkFile) Open() (io.ReadCloser, error) { return os.Open(f.file) }

// sdkFiles lists the files of the SDK module in top: what git lists under
// misc/ (tracked, and untracked but not ignored), filtered as the go command
// filters a module's files, sorted by path.
func (r *releaser) sdkFiles() ([]sdkFile, error) {
	out, err := r.git("ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", sdkDir)
	if err != nil {
		return nil, err
	}
	var files []modzip.File
	for _, name := range strings.Split(out, "\x00") {
		rel, ok := strings.CutPrefix(name, sdkDir+"/")
		if !ok {
			continue
		}
		file := filepath.Join(r.cfg.top, filepath.FromSlash(name))
		info, err := os.Lstat(file)
		if os.IsNotExist(err) {
			continue // deleted in the work tree (-dirty)
		}
		if err != nil {
			return nil, err
		}
		files = append(files, sdkFile{path: rel, file: file, info: info})
	}
	cf, err := modzip.CheckFiles(files)
	if err != nil {
		return nil, err
	}
	if err := cf.Err(); err != nil {
		return nil, fmt.Errorf("the files of %s: %w", sdkModule, err)
	}
	valid := map[string]bool{}
	for _, p := range cf.Valid {
		valid[p] = true
	}
	var keep []sdkFile
	for _, f := range files {
		if valid[f.Path()] {
			keep = append(keep, f.(sdkFile))
		}
	}
	slices.SortFunc(keep, func(a, b sdkFile) int { return strings.Compare(a.path, b.path) })
	return keep, nil
}

// writeSDK writes the SDK module's version into the GOPROXY tree proxy:
// MODULE/@v/list, VERSION.info, VERSION.mod and VERSION.zip.
func (r *releaser) writeSDK(proxy string) error {
	files, err := r.sdkFiles()
	if err != nil {
		return err
	}
	dir := filepath.Join(proxy, filepath.FromSlash(sdkModule), "@v")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	mtime, err := time.Parse(time.RFC3339, r.vtime)
	if err != nil {
		return err
	}
	m := module.Version{Path: sdkModule, Version: r.sdkVersion}
	zipName := filepath.Join(dir, m.Version+".zip")
	if err := writeModuleZip(zipName, m, files, mtime); err != nil {
		return err
	}
	if _, err := modzip.CheckZip(m, zipName); err != nil {
		return fmt.Errorf("checking %s: %w", zipName, err)
	}
	i := slices.IndexFunc(files, func(f sdkFile) bool { return f.path == "go.mod" })
	if i < 0 {
		return fmt.Errorf("%s has no go.mod", sdkDir)
	}
	if !slices.ContainsFunc(files, func(f sdkFile) bool { return f.path == sdkHeader }) {
		return fmt.Errorf("%s/%s is not in the module %s; the SDK ships its C header", sdkDir, sdkHeader, sdkModule)
	}
	if err := copyFile(filepath.Join(dir, m.Version+".mod"), files[i].file); err != nil {
		return err
	}
	info := fmt.Sprintf("{%q:%q, %q:%q}\n", "Version", m.Version, "Time", mtime.UTC().Format(time.RFC3339))
	if err := os.WriteFile(filepath.Join(dir, m.Version+".info"), []byte(info), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "list"), []byte(m.Version+"\n"), 0o644)
}

// writeModuleZip writes the module zip of m: files in order under the
// prefix PATH@VERSION/, compressed, each with mode 0644 and time mtime.
func writeModuleZip(name string, m module.Version, files []sdkFile, mtime time.Time) error {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.BestCompression)
	})
	for _, f := range files {
		data, err := os.ReadFile(f.file)
		if err != nil {
			return err
		}
		h := &zip.FileHeader{Name: m.Path + "@" + m.Version + "/" + f.path, Method: zip.Deflate, Modified: mtime.UTC()}
		h.SetMode(0o644)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(name, b.Bytes(), 0o644)
}
