package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"fpsafe.dev/misc/golineage/internal/agent"
	"fpsafe.dev/misc/golineage/internal/otlpout"
)

// The agent command: golineage's node agent (internal/agent), which
// profiles every fork-built process of the machine until it is stopped.

type agentFlags struct {
	out      string
	hz       int
	interval time.Duration
	parked   time.Duration
	duration time.Duration
	upstream bool

	otlp         string
	otlpInsecure bool
	otlpCA       string
	otlpHeaders  headerFlag

	metrics string
}

// headerFlag collects -otlp-header K=V flags.
type headerFlag map[string]string

func (h *headerFlag) String() string { return "" }

func (h *headerFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE")
	}
	if *h == nil {
		*h = headerFlag{}
	}
	(*h)[k] = v
	return nil
}

// exportGrace bounds how long the agent, once stopped, sends what its
// OTLP exporter still holds.
const exportGrace = 5 * time.Second

func agentFlagSet(fl *flag.FlagSet) func(*invocation) error {
	var af agentFlags
	fl.StringVar(&af.out, "o", "", "write each process's profile of each interval to a pprof file in `DIR` (SERVICE.PID.START.pb.gz)")
	fl.IntVar(&af.hz, "hz", agent.DefaultHz, "on-CPU samples per second of each CPU (`N`)")
	fl.DurationVar(&af.interval, "interval", agent.DefaultInterval, "how much time each profile covers (`D`)")
	fl.DurationVar(&af.parked, "parked", agent.DefaultParked, "read each process's parked goroutines every `D` for its off-CPU profile (0: no off-CPU profile)")
	fl.DurationVar(&af.duration, "duration", 0, "stop after `D` (default: run until SIGINT or SIGTERM, which write the last profiles)")
	fl.StringVar(&af.otlp, "otlp", "", "send OTLP profiles to `ENDPOINT`: HOST:PORT for gRPC, or an http:// or https:// URL (path "+otlpout.HTTPPath+" unless given)")
	fl.BoolVar(&af.otlpInsecure, "otlp-insecure", false, "send OTLP over gRPC without TLS")
	fl.StringVar(&af.otlpCA, "otlp-ca", "", "PEM `FILE` of the certificates that sign the OTLP endpoint's (default: the system's)")
	fl.Var(&af.otlpHeaders, "otlp-header", "send `KEY=VALUE` with every OTLP request (repeatable)")
	fl.StringVar(&af.metrics, "metrics", "", "serve the agent's counts in Prometheus's text format at http://`ADDR`/metrics (a loopback address)")
	fl.BoolVar(&af.upstream, "upstream", false, "also profile Go programs built without the lineage ABI (on-CPU stacks without lineage); otherwise they are skipped and counted")
	return func(inv *invocation) error { return runAgent(inv, af) }
}

// parkedConfig is agent.Config.Parked for a -parked (or the receiver's
// parked) of d: 0 turns the off-CPU profile off.
func parkedConfig(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

func runAgent(inv *invocation, af agentFlags) error {
	if len(inv.args) != 0 {
		return inv.usage("agent takes no operands")
	}
	if (af.out == "") == (af.otlp == "") {
		return inv.usage("need -o DIR or -otlp ENDPOINT (one of them)")
	}
	if af.hz <= 0 || af.hz > 10000 {
		return inv.usage("-hz %d: want 1..10000", af.hz)
	}
	if af.interval < 100*time.Millisecond {
		return inv.usage("-interval %v: want at least 100ms", af.interval)
	}
	if af.parked != 0 && af.parked < 10*time.Millisecond {
		return inv.usage("-parked %v: want 0 or at least 10ms", af.parked)
	}
	if af.duration < 0 {
		return inv.usage("-duration must not be negative")
	}
	var metrics net.Listener
	if af.metrics != "" {
		if err := checkLoopback(af.metrics); err != nil {
			return inv.usage("-metrics %s: %v", af.metrics, err)
		}
		var err error
		if metrics, err = net.Listen("tcp", af.metrics); err != nil {
			return fmt.Errorf("-metrics: %w", err)
		}
		defer metrics.Close()
	}
	var sink agent.Sink
	var exp *otlpout.Exporter
	if af.out != "" {
		if st, err := os.Stat(af.out); err != nil || !st.IsDir() {
			if err == nil {
				err = fmt.Errorf("not a directory")
			}
			return fmt.Errorf("cannot write profiles to %s (-o): %v", af.out, err)
		}
		sink = &agent.DirSink{Dir: af.out, Log: inv.stderr}
	} else {
		host, _ := os.Hostname()
		var err error
		exp, err = otlpout.NewExporter(otlpout.Config{Endpoint: af.otlp, Insecure: af.otlpInsecure, CAFile: af.otlpCA,
			Headers: af.otlpHeaders, Host: host, Log: inv.stderr})
		if err != nil {
			return err
		}
		sink = exp
	}
	a, err := agent.New(agent.Config{Hz: af.hz, Interval: af.interval, Parked: parkedConfig(af.parked), Upstream: af.upstream, BTF: os.Getenv(btfEnv), Log: inv.stderr}, sink)
	if err != nil {
		if exp != nil {
			exp.Close(context.Background())
		}
		return err
	}
	ctx := inv.ctx
	if af.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, af.duration)
		defer cancel()
	}
	if metrics != nil {
		defer serveMetrics(metrics, a, exp)()
	}
	err = a.Run(ctx)
	if exp != nil {
		cctx, cancel := context.WithTimeout(context.Background(), exportGrace)
		exp.Close(cctx)
		cancel()
		st := exp.Stats()
		fmt.Fprintf(inv.stderr, "golineage agent: OTLP: sent %d profiles in %d batches (%d retries), dropped %d\n", st.Profiles, st.Batches, st.Retries, st.Dropped)
	}
	return err
}
