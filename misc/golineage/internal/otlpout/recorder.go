package otlpout

import (
	"context"
	"net"
	"sync"

	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
)

// Recorder is an OTLP profiles endpoint over gRPC that keeps what it
// receives: what tests (and a person checking an agent) send profiles to,
// directly or through a Collector's OTLP exporter.
type Recorder struct {
	pprofileotlp.UnimplementedGRPCServer
	Addr string // HOST:PORT it listens on

	srv *grpc.Server
	mu  sync.Mutex
	got []pprofile.Profiles
}

// NewRecorder listens on addr ("127.0.0.1:0" for any free port).
func NewRecorder(addr string) (*Recorder, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &Recorder{Addr: l.Addr().String(), srv: grpc.NewServer()}
	pprofileotlp.RegisterGRPCServer(r.srv, r)
	go r.srv.Serve(l)
	return r, nil
}

// Export keeps a copy of the request's profiles.
func (r *Recorder) Export(_ context.Context, req pprofileotlp.ExportRequest) (pprofileotlp.ExportResponse, error) {
	p := pprofile.NewProfiles()
	req.Profiles().CopyTo(p)
	r.mu.Lock()
	r.got = append(r.got, p)
	r.mu.Unlock()
	return pprofileotlp.NewExportResponse(), nil
}

// Batches returns how many requests it received.
func (r *Recorder) Batches() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// Processes reads back every resource received (Read), by process.pid.
func (r *Recorder) Processes() (map[int64][]ReadProcess, error) {
	r.mu.Lock()
	got := r.got
	r.mu.Unlock()
	out := map[int64][]ReadProcess{}
	for _, pd := range got {
		ps, err := Read(pd)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			pid, _ := p.Resource["process.pid"].(int64)
			out[pid] = append(out[pid], p)
		}
	}
	return out, nil
}

// Close stops the endpoint.
func (r *Recorder) Close() { r.srv.Stop() }
