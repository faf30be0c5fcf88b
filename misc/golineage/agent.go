package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"fpsafe.dev/misc/golineage/internal/agent"
)

// The agent command: golineage's node agent (internal/agent), which
// profiles every fork-built process of the machine until it is stopped.

type agentFlags struct {
	out      string
	hz       int
	interval time.Duration
	duration time.Duration
	upstream bool
}

func agentFlagSet(fl *flag.FlagSet) func(*invocation) error {
	var af agentFlags
	fl.StringVar(&af.out, "o", "", "write each process's profile of each interval to a pprof file in `DIR` (SERVICE.PID.START.pb.gz)")
	fl.IntVar(&af.hz, "hz", agent.DefaultHz, "on-CPU samples per second of each CPU (`N`)")
	fl.DurationVar(&af.interval, "interval", agent.DefaultInterval, "how much time each profile covers (`D`)")
	fl.DurationVar(&af.duration, "duration", 0, "stop after `D` (default: run until SIGINT or SIGTERM, which write the last profiles)")
	fl.BoolVar(&af.upstream, "upstream", false, "also profile Go programs built without the lineage ABI (on-CPU stacks without lineage); otherwise they are skipped and counted")
	return func(inv *invocation) error { return runAgent(inv, af) }
}

func runAgent(inv *invocation, af agentFlags) error {
	if len(inv.args) != 0 {
		return inv.usage("agent takes no operands")
	}
	if af.out == "" {
		return inv.usage("need -o DIR")
	}
	if af.hz <= 0 || af.hz > 10000 {
		return inv.usage("-hz %d: want 1..10000", af.hz)
	}
	if af.interval < 100*time.Millisecond {
		return inv.usage("-interval %v: want at least 100ms", af.interval)
	}
	if af.duration < 0 {
		return inv.usage("-duration must not be negative")
	}
	if st, err := os.Stat(af.out); err != nil || !st.IsDir() {
		if err == nil {
			err = fmt.Errorf("not a directory")
		}
		return fmt.Errorf("cannot write profiles to %s (-o): %v", af.out, err)
	}
	sink := &agent.DirSink{Dir: af.out, Log: inv.stderr}
	a, err := agent.New(agent.Config{Hz: af.hz, Interval: af.interval, Upstream: af.upstream, BTF: os.Getenv(btfEnv), Log: inv.stderr}, sink)
	if err != nil {
		return err
	}
	ctx := inv.ctx
	if af.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, af.duration)
		defer cancel()
	}
	return a.Run(ctx)
}
