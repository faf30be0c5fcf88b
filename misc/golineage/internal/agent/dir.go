package agent

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DirSink writes each profile to a pprof file of its own in Dir, named by
// the process's service name, its PID and the profile's start time
// (SERVICE.PID.20060102T150405Z.pb.gz, and .offcpu.pb.gz for the off-CPU
// profile): for users without a Collector. A
// file appears whole (written aside, then renamed); a write that fails is
// reported on Log and the profile dropped.
type DirSink struct {
	Dir string
	Log io.Writer

	zw *gzip.Writer // reused: a compressor is a megabyte of state
}

// Export writes ps.
func (d *DirSink) Export(ps []Profile) {
	for _, p := range ps {
		if err := d.write(p); err != nil {
			fmt.Fprintf(d.Log, "golineage agent: %v\n", err)
		}
	}
}

func (d *DirSink) write(p Profile) error {
	start := time.Unix(0, p.Profile.TimeNanos).UTC().Format("20060102T150405Z")
	kind := ""
	if p.OffCPU {
		kind = ".offcpu"
	}
	name := fmt.Sprintf("%s.%d.%s%s.pb.gz", fileSafe(p.Process.ServiceName), p.Process.PID, start, kind)
	f, err := os.CreateTemp(d.Dir, "."+name+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing a profile: %w", err)
	}
	// Fastest compression: the files are written every interval, for every
	// process, and the agent's CPU time is the machine's.
	if d.zw == nil {
		d.zw, _ = gzip.NewWriterLevel(f, gzip.BestSpeed)
	} else {
		d.zw.Reset(f)
	}
	err = p.Profile.WriteUncompressed(d.zw)
	if cerr := d.zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(d.Dir, name))
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", filepath.Join(d.Dir, name), err)
	}
	return nil
}

// fileSafe makes s usable as part of a file name.
func fileSafe(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '/' || r == 0 || r < ' ' {
			return '_'
		}
		return r
	}, s)
	if s == "" || s == "." || s == ".." {
		s = "_"
	}
	return s
}
