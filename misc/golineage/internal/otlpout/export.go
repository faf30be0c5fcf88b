package otlpout

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"fpsafe.dev/misc/golineage/internal/agent"
)

// Config says where and how the exporter sends.
type Config struct {
	// Endpoint is HOST:PORT for OTLP over gRPC, or an http:// or https://
	// URL for OTLP over HTTP (the path defaults to /v1development/profiles).
	Endpoint string
	// Insecure sends over gRPC without TLS (an http:// URL never uses it).
	Insecure bool
	// CAFile is a PEM file of the certificates that sign the endpoint's
	// ("" for the system's).
	CAFile string
	// Headers are sent with every request (gRPC metadata, HTTP headers):
	// an API key, a tenant.
	Headers map[string]string

	// QueueBytes bounds the batches waiting to be sent, which are kept
	// encoded (16 MiB if 0): past it the oldest are dropped, and counted.
	QueueBytes int
	// Timeout bounds one request (10s if 0).
	Timeout time.Duration
	// RetryFor is how long a batch is retried, with backoff from 100ms to
	// 5s, while the endpoint is unavailable (60s if 0); then it is dropped.
	RetryFor time.Duration

	Host string    // the host.name attribute
	Log  io.Writer // errors, once per kind until a send succeeds; nil discards them
}

// HTTPPath is the OTLP/HTTP path of profiles.
const HTTPPath = "/v1development/profiles"

// ExportStats counts what the exporter did.
type ExportStats struct {
	Batches, Profiles uint64 // sent and accepted
	Retries           uint64 // sends tried again
	Dropped           uint64 // profiles dropped: the queue was full, the endpoint refused them, or retries ran out
	QueuedBytes       int64  // waiting now
}

// Exporter sends the agent's profiles to an OTLP endpoint. Export
// converts and queues (it never blocks the agent); a goroutine sends.
type Exporter struct {
	cfg  Config
	send func(ctx context.Context, data []byte) error // an encoded ExportRequest
	conn *grpc.ClientConn

	mu     sync.Mutex
	queue  []batch
	bytes  int
	wake   chan struct{}
	closed bool
	done   chan struct{}
	stop   context.CancelFunc

	batches, profiles, retries, dropped atomic.Uint64
	logged                              sync.Map // error kinds logged since the last success
}

type batch struct {
	data []byte // the encoded ExportRequest
	n    int    // profiles
}

// NewExporter returns an exporter to cfg.Endpoint; it connects when it
// first sends.
func NewExporter(cfg Config) (*Exporter, error) {
	if cfg.QueueBytes == 0 {
		cfg.QueueBytes = 16 << 20
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.RetryFor == 0 {
		cfg.RetryFor = 60 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	e := &Exporter{cfg: cfg, wake: make(chan struct{}, 1), done: make(chan struct{})}
	tlsConf, err := tlsConfig(cfg.CAFile)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(cfg.Endpoint, "http://") || strings.HasPrefix(cfg.Endpoint, "https://") {
		url := cfg.Endpoint
		if rest := url[strings.Index(url, "//")+2:]; !strings.Contains(rest, "/") {
			url += HTTPPath
		}
		client := &http.Client{Timeout: cfg.Timeout, Transport: &http.Transport{TLSClientConfig: tlsConf}}
		e.send = func(ctx context.Context, data []byte) error {
			return e.sendHTTP(ctx, client, url, data)
		}
	} else {
		if cfg.Endpoint == "" || strings.Contains(cfg.Endpoint, "/") {
			return nil, fmt.Errorf("OTLP endpoint %q: want HOST:PORT (gRPC) or an http:// or https:// URL", cfg.Endpoint)
		}
		creds := credentials.NewTLS(tlsConf)
		if cfg.Insecure {
			creds = insecure.NewCredentials()
		}
		conn, err := grpc.NewClient(cfg.Endpoint, grpc.WithTransportCredentials(creds))
		if err != nil {
			return nil, fmt.Errorf("OTLP endpoint %s: %w", cfg.Endpoint, err)
		}
		e.conn = conn
		client := pprofileotlp.NewGRPCClient(conn)
		e.send = func(ctx context.Context, data []byte) error {
			req := pprofileotlp.NewExportRequest()
			if err := req.UnmarshalProto(data); err != nil {
				return fmt.Errorf("%w: decoding the queued request: %v", errPermanent, err)
			}
			if len(cfg.Headers) > 0 {
				ctx = metadata.NewOutgoingContext(ctx, metadata.New(cfg.Headers))
			}
			resp, err := client.Export(ctx, req)
			if err != nil {
				return err
			}
			if ps := resp.PartialSuccess(); ps.RejectedProfiles() > 0 {
				e.dropped.Add(uint64(ps.RejectedProfiles()))
				e.logOnce("rejected", fmt.Sprintf("the endpoint rejected %d profiles: %s", ps.RejectedProfiles(), ps.ErrorMessage()))
			}
			return nil
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	e.stop = stop
	go e.run(ctx)
	return e, nil
}

func tlsConfig(caFile string) (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return conf, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("OTLP CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("OTLP CA file %s: no PEM certificate in it", caFile)
	}
	conf.RootCAs = pool
	return conf, nil
}

// errPermanent marks a send that retrying cannot fix.
var errPermanent = errors.New("permanent")

func (e *Exporter) sendHTTP(ctx context.Context, client *http.Client, url string, body []byte) error {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %v", errPermanent, err)
	}
	hr.Header.Set("Content-Type", "application/x-protobuf")
	for k, v := range e.cfg.Headers {
		hr.Header.Set(k, v)
	}
	resp, err := client.Do(hr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch {
	case resp.StatusCode/100 == 2:
		return nil
	case resp.StatusCode == 429 || resp.StatusCode == 502 || resp.StatusCode == 503 || resp.StatusCode == 504:
		return fmt.Errorf("HTTP %s", resp.Status)
	default:
		return fmt.Errorf("%w: HTTP %s: %s", errPermanent, resp.Status, strings.TrimSpace(string(msg)))
	}
}

// retryable reports whether a failed send may succeed later.
func retryable(err error) bool {
	if errors.Is(err, errPermanent) {
		return false
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		switch s.Code() {
		case codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded, codes.Aborted, codes.Canceled:
			return true
		}
		return false
	}
	return true // a network error
}

// Export converts ps and queues them. It never blocks: a full queue drops
// its oldest batches.
func (e *Exporter) Export(ps []agent.Profile) {
	if len(ps) == 0 {
		return
	}
	// Queued encoded: the bytes are what a batch holds while it waits,
	// several times less than its pdata.
	data, err := pprofileotlp.NewExportRequestFromProfiles(Convert(ps, e.cfg.Host)).MarshalProto()
	if err != nil {
		e.dropped.Add(uint64(len(ps)))
		e.logOnce("encode", fmt.Sprintf("encoding profiles: %v", err))
		return
	}
	b := batch{data: data, n: len(ps)}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		e.dropped.Add(uint64(b.n))
		return
	}
	e.queue = append(e.queue, b)
	e.bytes += len(b.data)
	for e.bytes > e.cfg.QueueBytes && len(e.queue) > 1 {
		old := e.pop()
		e.dropped.Add(uint64(old.n))
		e.logOnce("queue", fmt.Sprintf("the send queue is full (%d bytes): dropping the oldest profiles", e.cfg.QueueBytes))
	}
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// pop takes the oldest batch off the queue; e.mu is held. Its slot in the
// queue's array is cleared: the array, which later batches are appended
// to, must not keep a dropped or sent batch's bytes alive.
func (e *Exporter) pop() batch {
	b := e.queue[0]
	e.queue[0] = batch{}
	e.queue = e.queue[1:]
	e.bytes -= len(b.data)
	return b
}

// run sends the queued batches in order until Close.
func (e *Exporter) run(ctx context.Context) {
	defer close(e.done)
	for {
		e.mu.Lock()
		if len(e.queue) == 0 {
			closed := e.closed
			e.mu.Unlock()
			if closed || ctx.Err() != nil {
				return
			}
			select {
			case <-e.wake:
			case <-ctx.Done():
			}
			continue
		}
		// The batch leaves the queue as its send starts: the queue's bound
		// drops only batches that wait.
		b := e.pop()
		e.mu.Unlock()
		if err := e.sendRetrying(ctx, b); err != nil {
			e.dropped.Add(uint64(b.n))
			e.logOnce(errKind(err), fmt.Sprintf("dropping %d profiles: %v", b.n, err))
			if ctx.Err() != nil {
				e.dropRest()
				return
			}
		}
	}
}

// dropRest drops what is still queued (Close ran out of time).
func (e *Exporter) dropRest() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, b := range e.queue {
		e.dropped.Add(uint64(b.n))
	}
	e.queue, e.bytes = nil, 0
}

// sendRetrying sends b, retrying with backoff while the error is
// retryable, for at most RetryFor or until ctx is done.
func (e *Exporter) sendRetrying(ctx context.Context, b batch) error {
	deadline := time.Now().Add(e.cfg.RetryFor)
	backoff := 100 * time.Millisecond
	for {
		sctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
		err := e.send(sctx, b.data)
		cancel()
		if err == nil {
			e.batches.Add(1)
			e.profiles.Add(uint64(b.n))
			e.logged.Clear()
			return nil
		}
		if !retryable(err) || time.Now().Add(backoff).After(deadline) {
			return err
		}
		e.retries.Add(1)
		e.logOnce("retry:"+errKind(err), fmt.Sprintf("sending to %s: %v (retrying)", e.cfg.Endpoint, err))
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func errKind(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Code().String()
	}
	return "error"
}

// logOnce writes msg unless a message of its kind was written since the
// last successful send.
func (e *Exporter) logOnce(kind, msg string) {
	if _, loaded := e.logged.LoadOrStore(kind, true); !loaded {
		fmt.Fprintf(e.cfg.Log, "golineage agent: OTLP: %s\n", msg)
	}
}

// Stats returns the exporter's counts.
func (e *Exporter) Stats() ExportStats {
	e.mu.Lock()
	q := e.bytes
	e.mu.Unlock()
	return ExportStats{Batches: e.batches.Load(), Profiles: e.profiles.Load(), Retries: e.retries.Load(), Dropped: e.dropped.Load(), QueuedBytes: int64(q)}
}

// Close sends what is queued, until ctx is done (then drops the rest and
// counts it), and closes the connection.
func (e *Exporter) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	select {
	case <-e.done:
	case <-ctx.Done():
		e.stop()
		<-e.done
	}
	e.stop()
	if e.conn != nil {
		return e.conn.Close()
	}
	return nil
}
