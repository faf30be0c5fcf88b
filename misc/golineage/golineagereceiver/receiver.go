// Package golineagereceiver is golineage's node agent as an OpenTelemetry
// Collector receiver: built into a Collector beside the OTLP receiver and
// the exporters a backend needs, it profiles every process of the node
// that runs a Go program built with the lineage ABI and hands each
// interval's profiles, with each goroutine's lineage stitched into its
// stacks, to the pipeline as OTLP profiles.
//
// The Collector runs profiles pipelines only with the feature gate
// service.profilesSupport on (--feature-gates=service.profilesSupport).
// A configuration:
//
//	receivers:
//	  golineage:
//	    hz: 19          # on-CPU samples a second of each CPU
//	    interval: 10s   # time each profile covers
//	    parked: 10s     # how often parked goroutines are read (0: no off-CPU profile)
//	    upstream: false # also profile Go programs without the lineage ABI
//	exporters:
//	  otlp_grpc:
//	    endpoint: backend:4317
//	service:
//	  pipelines:
//	    profiles:
//	      receivers: [golineage]
//	      exporters: [otlp_grpc]
//
// The receiver needs what the agent needs (doc/agent.md): CAP_BPF and
// CAP_PERFMON (or root), the kernel's BTF, and the permission to read
// other processes' memory and /proc files (CAP_SYS_PTRACE).
package golineagereceiver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/xreceiver"
	"go.uber.org/zap"

	"fpsafe.dev/misc/golineage/internal/agent"
	"fpsafe.dev/misc/golineage/internal/otlpout"
)

// Type is the receiver's type in a Collector configuration.
var Type = component.MustNewType("golineage")

// Config is the receiver's configuration.
type Config struct {
	// Hz is how many on-CPU samples a second each CPU takes.
	Hz int `mapstructure:"hz"`
	// Interval is how much time each profile covers.
	Interval time.Duration `mapstructure:"interval"`
	// Parked is how often each process's parked goroutines are read for
	// its off-CPU profile; 0 makes none.
	Parked time.Duration `mapstructure:"parked"`
	// Upstream also profiles Go programs built without the lineage ABI
	// (on-CPU stacks without lineage).
	Upstream bool `mapstructure:"upstream"`
	// BTF is the kernel's BTF file (default /sys/kernel/btf/vmlinux).
	BTF string `mapstructure:"btf"`
	// Queue is how many intervals' profiles may wait for the pipeline:
	// past it an interval's are dropped, and counted.
	Queue int `mapstructure:"queue"`

	_ struct{}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Hz < 1 || c.Hz > 10000 {
		return fmt.Errorf("hz %d: want 1 to 10000", c.Hz)
	}
	if c.Interval < 100*time.Millisecond {
		return fmt.Errorf("interval %v: want at least 100ms", c.Interval)
	}
	if c.Parked != 0 && c.Parked < 10*time.Millisecond {
		return fmt.Errorf("parked %v: want 0 or at least 10ms", c.Parked)
	}
	if c.Queue < 1 {
		return fmt.Errorf("queue %d: want at least 1", c.Queue)
	}
	return nil
}

// NewFactory returns the receiver's factory.
func NewFactory() xreceiver.Factory {
	return xreceiver.NewFactory(Type, createDefaultConfig, xreceiver.WithProfiles(createProfiles, component.StabilityLevelAlpha))
}

func createDefaultConfig() component.Config {
	return &Config{Hz: agent.DefaultHz, Interval: agent.DefaultInterval, Parked: agent.DefaultParked, Queue: 4}
}

func createProfiles(_ context.Context, set receiver.Settings, cfg component.Config, next xconsumer.Profiles) (xreceiver.Profiles, error) {
	return &lineageReceiver{cfg: *cfg.(*Config), next: next, logger: set.Logger}, nil
}

// lineageReceiver runs an agent whose sink hands the profiles to the
// pipeline through a bounded queue, so that a slow pipeline does not stall
// sampling.
type lineageReceiver struct {
	cfg     Config
	next    xconsumer.Profiles
	logger  *zap.Logger
	host    string
	queue   chan pprofile.Profiles
	dropped atomic.Uint64
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	a       *agent.Agent
}

// Start loads the BPF program and starts sampling. A kernel or privileges
// that do not allow it fail the start.
func (r *lineageReceiver) Start(_ context.Context, _ component.Host) error {
	r.host, _ = os.Hostname()
	r.queue = make(chan pprofile.Profiles, r.cfg.Queue)
	a, err := agent.New(agent.Config{Hz: r.cfg.Hz, Interval: r.cfg.Interval, Parked: parked(r.cfg.Parked), Upstream: r.cfg.Upstream, BTF: r.cfg.BTF, Log: &zapWriter{r.logger}}, r)
	if err != nil {
		return err
	}
	r.a = a
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		defer close(r.queue) // after the agent's last Export
		if err := a.Run(ctx); err != nil {
			r.logger.Error("golineage agent stopped", zap.Error(err))
		}
	}()
	go func() {
		defer r.wg.Done()
		for pd := range r.queue {
			if err := r.next.ConsumeProfiles(context.Background(), pd); err != nil {
				r.logger.Warn("the pipeline refused profiles", zap.Error(err))
			}
		}
	}()
	return nil
}

// Export is the agent's sink: it queues, never blocks.
func (r *lineageReceiver) Export(ps []agent.Profile) {
	select {
	case r.queue <- otlpout.Convert(ps, r.host):
	default:
		if r.dropped.Add(uint64(len(ps))) == uint64(len(ps)) {
			r.logger.Warn("the pipeline is behind: dropping profiles (counted at shutdown)")
		}
	}
}

// Shutdown stops sampling, hands the last profiles to the pipeline and
// detaches; ctx bounds the wait.
func (r *lineageReceiver) Shutdown(ctx context.Context) error {
	if r.cancel == nil {
		return nil // never started
	}
	r.cancel()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return errors.Join(errors.New("golineage receiver: shutdown timed out"), ctx.Err())
	}
	st := r.a.Stats()
	r.logger.Info("golineage receiver stopped", zap.Uint64("samples", st.Samples), zap.Uint64("lost", st.Lost),
		zap.Uint64("profiles", st.Profiles), zap.Uint64("dropped", r.dropped.Load()), zap.Uint64("started", st.Started))
	return nil
}

// zapWriter logs the agent's lines.
type zapWriter struct{ l *zap.Logger }

func (w *zapWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		w.l.Info(string(bytes.TrimPrefix(line, []byte("golineage agent: "))))
	}
	return len(p), nil
}

// parked is agent.Config.Parked for the configuration's parked: 0 turns
// the off-CPU profile off.
func parked(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
