package otlpout

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"fpsafe.dev/misc/golineage/internal/agent"
)

// testProfile is a two-sample profile of process pid: a worker goroutine
// stitched to its creator, and a thread without a goroutine.
func testProfile(pid int) agent.Profile {
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/bin/app", BuildID: "abcd"}
	fn := func(id uint64, name string) *profile.Function {
		return &profile.Function{ID: id, Name: name, SystemName: name, Filename: "app.go"}
	}
	work, worker, created, main := fn(1, "main.work"), fn(2, "main.worker"), fn(3, "created by main.main"), fn(4, "main.main")
	loc := func(id, addr uint64, f *profile.Function, line int64) *profile.Location {
		return &profile.Location{ID: id, Address: addr, Mapping: m, Line: []profile.Line{{Function: f, Line: line}}}
	}
	l1, l2, l3, l4 := loc(1, 0x401000, work, 10), loc(2, 0x402000, worker, 20), loc(3, 0x403000, created, 30), loc(4, 0x404000, main, 40)
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        10_000_000,
		TimeNanos:     1_700_000_000_000_000_000,
		DurationNanos: 10_000_000_000,
		Mapping:       []*profile.Mapping{m},
		Function:      []*profile.Function{work, worker, created, main},
		Location:      []*profile.Location{l1, l2, l3, l4},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{l1, l2, l3, l4}, Value: []int64{3, 30_000_000}, NumLabel: map[string][]int64{"thread": {11}, "goroutine": {7}}},
			{Location: []*profile.Location{l4}, Value: []int64{1, 10_000_000}, NumLabel: map[string][]int64{"thread": {12}}, Label: map[string][]string{"state": {"running"}}},
		},
	}
	return agent.Profile{Process: &agent.Process{PID: pid, ServiceName: "app", ExeName: "app", ExePath: "/bin/app", GoVersion: "go1.27.3-fpsafe1", ContainerID: strings.Repeat("ab", 32), Lineage: true}, Profile: p}
}

// TestConvert: the OTLP profiles hold one resource per process with the
// semantic conventions' attributes, the samples' stacks and labels as the
// pprof profile has them, every table starting with its zero value, and
// each entry once across processes.
func TestConvert(t *testing.T) {
	pd := Convert([]agent.Profile{testProfile(10), testProfile(20), testProfile(10)}, "node1")
	d := pd.Dictionary()
	if d.StringTable().At(0) != "" || d.StackTable().At(0).LocationIndices().Len() != 0 || d.LocationTable().At(0).Lines().Len() != 0 {
		t.Errorf("tables do not start with their zero values")
	}
	// 4 functions and their locations, once each for the three profiles.
	if d.FunctionTable().Len() != 1+4 || d.LocationTable().Len() != 1+4 || d.StackTable().Len() != 1+2 || d.MappingTable().Len() != 1+1 {
		t.Errorf("tables: %d functions, %d locations, %d stacks, %d mappings; want 5, 5, 3, 2", d.FunctionTable().Len(), d.LocationTable().Len(), d.StackTable().Len(), d.MappingTable().Len())
	}
	got, err := Read(pd)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Profiles != 2 || got[1].Profiles != 1 {
		t.Fatalf("%d resources (%+v); want 2, with 2 and 1 profiles", len(got), got)
	}
	want := map[string]any{"service.name": "app", "process.pid": int64(10), "process.executable.name": "app", "process.executable.path": "/bin/app",
		"process.runtime.name": "go", "process.runtime.version": "go1.27.3-fpsafe1", "host.name": "node1", "container.id": strings.Repeat("ab", 32)}
	if !reflect.DeepEqual(got[0].Resource, want) {
		t.Errorf("resource %v\nwant %v", got[0].Resource, want)
	}
	s := got[1].Samples
	if len(s) != 2 || strings.Join(s[0].Funcs, ";") != "main.work;main.worker;created by main.main;main.main" || s[0].Value != 3 ||
		!reflect.DeepEqual(s[0].Attrs, map[string]any{AttrThreadID: int64(11), AttrGoroutineID: int64(7)}) ||
		!reflect.DeepEqual(s[1].Attrs, map[string]any{AttrThreadID: int64(12), "state": "running"}) {
		t.Errorf("samples %+v", s)
	}
	prof := pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0)
	str := func(i int32) string { return d.StringTable().At(int(i)) }
	if str(prof.SampleType().TypeStrindex()) != "samples" || str(prof.PeriodType().TypeStrindex()) != "cpu" || prof.Period() != 10_000_000 ||
		uint64(prof.Time()) != 1_700_000_000_000_000_000 || prof.DurationNano() != 10_000_000_000 || prof.ProfileID().IsEmpty() {
		t.Errorf("profile's types, period or times wrong")
	}
}

// server is an OTLP profiles server over gRPC that records what it gets,
// failing the first fail requests with Unavailable.
type server struct {
	pprofileotlp.UnimplementedGRPCServer
	mu      sync.Mutex
	got     []pprofile.Profiles
	headers []metadata.MD
	fail    atomic.Int32
	block   chan struct{} // if set, requests wait for it
}

func (s *server) Export(ctx context.Context, req pprofileotlp.ExportRequest) (pprofileotlp.ExportResponse, error) {
	if s.block != nil {
		select {
		case <-s.block:
		case <-ctx.Done():
			return pprofileotlp.NewExportResponse(), ctx.Err()
		}
	}
	if s.fail.Add(-1) >= 0 {
		return pprofileotlp.NewExportResponse(), status.Error(codes.Unavailable, "try later")
	}
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	p := pprofile.NewProfiles()
	req.Profiles().CopyTo(p)
	s.got = append(s.got, p)
	s.headers = append(s.headers, md)
	return pprofileotlp.NewExportResponse(), nil
}

func (s *server) received() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

func startServer(t *testing.T, s *server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	pprofileotlp.RegisterGRPCServer(g, s)
	go g.Serve(l)
	t.Cleanup(g.Stop)
	return l.Addr().String()
}

// TestExportGRPC: batches arrive in order with the headers, after the
// retries an unavailable endpoint needs, and Close sends what is queued.
func TestExportGRPC(t *testing.T) {
	s := &server{}
	s.fail.Store(2)
	e, err := NewExporter(Config{Endpoint: startServer(t, s), Insecure: true, Headers: map[string]string{"x-tenant": "t1"}})
	if err != nil {
		t.Fatal(err)
	}
	e.Export([]agent.Profile{testProfile(1)})
	e.Export([]agent.Profile{testProfile(2), testProfile(3)})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st := e.Stats()
	if st.Batches != 2 || st.Profiles != 3 || st.Retries != 2 || st.Dropped != 0 || st.QueuedBytes != 0 {
		t.Errorf("stats %+v; want 2 batches of 3 profiles after 2 retries", st)
	}
	if s.received() != 2 || s.got[1].ResourceProfiles().Len() != 2 {
		t.Fatalf("server got %d batches", s.received())
	}
	if v := s.headers[0].Get("x-tenant"); len(v) != 1 || v[0] != "t1" {
		t.Errorf("header x-tenant %v", v)
	}
	e.Export([]agent.Profile{testProfile(4)})
	if st := e.Stats(); st.Dropped != 1 {
		t.Errorf("export after Close: %d dropped, want 1", st.Dropped)
	}
}

// TestExportDown: an endpoint that is not there costs each batch its retry
// budget, then the batch is dropped and counted; the queue stays within
// its bound meanwhile, dropping its oldest batches; Close gives up on what
// is left when its context ends.
func TestExportDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	e, err := NewExporter(Config{Endpoint: addr, Insecure: true, RetryFor: 300 * time.Millisecond, QueueBytes: 3000})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		e.Export([]agent.Profile{testProfile(1)})
		if q := e.Stats().QueuedBytes; q > 3000+2000 {
			t.Fatalf("queue holds %d bytes, bound 3000 (plus one batch)", q)
		}
	}
	time.Sleep(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	e.Close(ctx)
	st := e.Stats()
	if st.Batches != 0 || st.Dropped != 20 || st.Retries == 0 || st.QueuedBytes != 0 {
		t.Errorf("stats %+v; want all 20 dropped after retries", st)
	}
}

// TestExportHTTP: OTLP over HTTP posts protobuf to the profiles path with
// the headers; a 4xx is not retried.
func TestExportHTTP(t *testing.T) {
	var mu sync.Mutex
	var got []pprofile.Profiles
	var status4xx atomic.Bool
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != HTTPPath || r.Header.Get("Content-Type") != "application/x-protobuf" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "bad request "+r.URL.Path, http.StatusBadRequest)
			return
		}
		if status4xx.Load() {
			http.Error(w, "no", http.StatusBadRequest)
			return
		}
		body, _ := io.ReadAll(r.Body)
		req := pprofileotlp.NewExportRequest()
		if err := req.UnmarshalProto(body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, req.Profiles())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer hs.Close()
	e, err := NewExporter(Config{Endpoint: hs.URL, Headers: map[string]string{"Authorization": "Bearer k"}})
	if err != nil {
		t.Fatal(err)
	}
	e.Export([]agent.Profile{testProfile(1)})
	for deadline := time.Now().Add(5 * time.Second); e.Stats().Batches == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	status4xx.Store(true)
	e.Export([]agent.Profile{testProfile(2)})
	e.Close(context.Background())
	st := e.Stats()
	if st.Batches != 1 || st.Dropped != 1 || st.Retries != 0 {
		t.Errorf("stats %+v; want one sent, one dropped without retries", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("server got %d batches", len(got))
	}
	if r, err := Read(got[0]); err != nil || len(r) != 1 || r[0].Resource["process.pid"] != int64(1) {
		t.Errorf("read back %+v, %v", r, err)
	}
}

// TestExporterBadConfig: endpoints and CA files that cannot work are
// refused at once.
func TestExporterBadConfig(t *testing.T) {
	for _, cfg := range []Config{{}, {Endpoint: "host/path"}, {Endpoint: "localhost:4317", CAFile: "/nonexistent"}} {
		if _, err := NewExporter(cfg); err == nil {
			t.Errorf("NewExporter(%+v) succeeded", cfg)
		}
	}
}
