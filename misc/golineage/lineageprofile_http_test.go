package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	httppprof "net/http/pprof"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/pprof/profile"
)

// lpHTTPSpawn starts n goroutines at one go statement; they wait for
// release.
//
//go:noinline
func lpHTTPSpawn(n int, started *sync.WaitGroup, release chan struct{}) {
	for range n {
		go func() {
			started.Done()
			<-release
		}()
	}
}

// TestGoroutineCreateHTTP checks that net/http/pprof serves the fork's
// goroutinecreate profile (issue 27): its index lists it, and
// /debug/pprof/goroutinecreate is a profile that github.com/google/pprof
// and `go tool pprof URL` read, counting the goroutines this test started
// at their go statement, as its debug=1 text does.
func TestGoroutineCreateHTTP(t *testing.T) {
	const n = 7
	var started sync.WaitGroup
	release := make(chan struct{})
	started.Add(n)
	lpHTTPSpawn(n, &started, release)
	defer close(release)
	started.Wait()

	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", httppprof.Index)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(path string) []byte {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %v %s\n%s", path, err, resp.Status, b)
		}
		return b
	}

	if idx := string(get("/debug/pprof/")); !strings.Contains(idx, "goroutinecreate") {
		t.Errorf("/debug/pprof/ does not list goroutinecreate:\n%s", idx)
	}
	// The test binary's package main is named by its import path.
	site := runtime.FuncForPC(reflect.ValueOf(lpHTTPSpawn).Pointer()).Name()
	p, err := profile.Parse(strings.NewReader(string(get("/debug/pprof/goroutinecreate"))))
	if err != nil {
		t.Fatalf("parsing /debug/pprof/goroutinecreate: %v", err)
	}
	var at int64
	for _, s := range p.Sample {
		if fr := lpSampleFrames(s); len(fr) > 0 && fr[0].Func == site {
			at += s.Value[0]
		}
	}
	if at != n {
		t.Errorf("/debug/pprof/goroutinecreate: %d goroutines created at %s, want %d\n%s", at, site, n, p)
	}
	if txt := string(get("/debug/pprof/goroutinecreate?debug=1")); !strings.HasPrefix(txt, "goroutinecreate profile: total ") || !strings.Contains(txt, "#\t0x") || !strings.Contains(txt, site) {
		t.Errorf("/debug/pprof/goroutinecreate?debug=1:\n%s", txt)
	}

	// What a user runs: go tool pprof -top URL.
	cmd := exec.Command("go", "tool", "pprof", "-top", "-nodecount=1000", srv.URL+"/debug/pprof/goroutinecreate")
	cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	found := false
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 6 && f[5] == site {
			found = true
			if f[0] != "7" {
				t.Errorf("go tool pprof -top: %s flat %s, want %d", site, f[0], n)
			}
		}
	}
	if !found {
		t.Errorf("go tool pprof -top does not list %s:\n%s", site, out)
	}
}
