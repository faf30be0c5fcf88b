package main

// Adding files to cmd/distpack's archives. cmd/distpack keeps a fixed list of
// commands (go, gofmt, and the build tools in pkg/tool), so the fork's own
// commands are added afterwards: each archive is copied entry by entry, and
// each added file goes into its directory at its sorted place, with the
// header of a file already there (same mtime, mode, owner), so that the
// result is as reproducible as cmd/distpack's own output.

import (
	"archive/tar"
	"archive/zip"
	"compress/flate"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// An addition is a file to add: Name inside the archive, File on disk.
type addition struct{ Name, File string }

// inserter decides where additions go in a stream of sorted entry names: an
// addition is due before the first later name in its directory, or right
// after its directory's last file.
type inserter struct {
	pending []addition
	seen    map[string]string // directory -> name of the last file seen in it
}

func newInserter(add []addition) *inserter {
	add = slices.Clone(add)
	slices.SortFunc(add, func(a, b addition) int { return strings.Compare(a.Name, b.Name) })
	return &inserter{pending: add, seen: map[string]string{}}
}

// due returns the additions to write before the entry name (a file unless it
// ends in "/"), and the name of a file in their directory to copy a header from.
func (in *inserter) due(name string) (out []addition, sibling []string) {
	dir := path.Dir(name)
	isFile := !strings.HasSuffix(name, "/")
	var keep []addition
	for _, a := range in.pending {
		ad := path.Dir(a.Name)
		last, seen := in.seen[ad]
		switch {
		case isFile && ad == dir && a.Name < name:
			out, sibling = append(out, a), append(sibling, name)
		case seen && ad != dir:
			out, sibling = append(out, a), append(sibling, last)
		default:
			keep = append(keep, a)
		}
	}
	in.pending = keep
	if isFile {
		in.seen[dir] = name
	}
	return out, sibling
}

// rest returns the additions whose directory ended the archive.
func (in *inserter) rest() ([]addition, []string, error) {
	var out []addition
	var sibling []string
	for _, a := range in.pending {
		last, ok := in.seen[path.Dir(a.Name)]
		if !ok {
			return nil, nil, fmt.Errorf("cannot add %s: the archive has no files in %s", a.Name, path.Dir(a.Name))
		}
		out, sibling = append(out, a), append(sibling, last)
	}
	return out, sibling, nil
}

// addToTgz writes dst: the gzip-compressed tar archive src with add inserted.
func addToTgz(dst, src string, add []addition) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	tr := tar.NewReader(zr)

	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	zw, err := gzip.NewWriterLevel(out, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)

	ins := newInserter(add)
	headers := map[string]tar.Header{}
	writeAdded := func(adds []addition, siblings []string) error {
		for i, a := range adds {
			h := headers[siblings[i]]
			if err := tarAdd(tw, h, a); err != nil {
				return err
			}
		}
		return nil
	}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", src, err)
		}
		headers[h.Name] = *h
		if err := writeAdded(ins.due(h.Name)); err != nil {
			return err
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return fmt.Errorf("copying %s from %s: %w", h.Name, src, err)
		}
	}
	adds, siblings, err := ins.rest()
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if err := writeAdded(adds, siblings); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// tarAdd writes a with the sibling's header fields.
func tarAdd(tw *tar.Writer, sibling tar.Header, a addition) error {
	data, err := os.ReadFile(a.File)
	if err != nil {
		return err
	}
	h := sibling
	h.Name = a.Name
	h.Size = int64(len(data))
	if err := tw.WriteHeader(&h); err != nil {
		return fmt.Errorf("adding %s: %w", a.Name, err)
	}
	_, err = tw.Write(data)
	return err
}

// addToZip writes dst: the zip archive src with add inserted. Existing
// entries are copied without recompression.
func addToZip(dst, src string, add []addition) (err error) {
	zr, err := zip.OpenReader(src)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	defer zr.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	zw := zip.NewWriter(out)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.BestCompression)
	})

	ins := newInserter(add)
	headers := map[string]*zip.FileHeader{}
	writeAdded := func(adds []addition, siblings []string) error {
		for i, a := range adds {
			if err := zipAdd(zw, headers[siblings[i]], a); err != nil {
				return err
			}
		}
		return nil
	}
	for _, f := range zr.File {
		headers[f.Name] = &f.FileHeader
		if err := writeAdded(ins.due(f.Name)); err != nil {
			return err
		}
		if err := zw.Copy(f); err != nil {
			return fmt.Errorf("copying %s from %s: %w", f.Name, src, err)
		}
	}
	adds, siblings, err := ins.rest()
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if err := writeAdded(adds, siblings); err != nil {
		return err
	}
	return zw.Close()
}

// zipAdd writes a compressed, with the sibling's time and mode.
func zipAdd(zw *zip.Writer, sibling *zip.FileHeader, a addition) error {
	data, err := os.ReadFile(a.File)
	if err != nil {
		return err
	}
	h := &zip.FileHeader{Name: a.Name, Method: zip.Deflate, Modified: sibling.Modified}
	h.SetMode(sibling.Mode())
	w, err := zw.CreateHeader(h)
	if err != nil {
		return fmt.Errorf("adding %s: %w", a.Name, err)
	}
	_, err = w.Write(data)
	return err
}

// extractTgz unpacks the gzip-compressed tar archive src into dir; it is
// used to check an archive, and refuses names that leave dir.
func extractTgz(dir, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", src, err)
		}
		if !filepath.IsLocal(h.Name) {
			return fmt.Errorf("%s: entry %q leaves the archive's directory", src, h.Name)
		}
		name := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(name, 0o777)
		case tar.TypeReg:
			err = writeEntry(name, tr, h.FileInfo().Mode().Perm())
		default:
			err = fmt.Errorf("%s: entry %q has type %q; only files and directories are expected", src, h.Name, h.Typeflag)
		}
		if err != nil {
			return err
		}
	}
}

func writeEntry(name string, r io.Reader, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o777); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
