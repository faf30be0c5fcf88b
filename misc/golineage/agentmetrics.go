package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"fpsafe.dev/misc/golineage/internal/agent"
	"fpsafe.dev/misc/golineage/internal/otlpout"
)

// The agent's -metrics endpoint: its counts in Prometheus's text format,
// on a loopback address only (a node-local scraper, or curl).

// checkLoopback refuses an address that is not on a loopback interface.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s is not a loopback address (127.0.0.1, [::1] or localhost)", host)
	}
	return nil
}

// serveMetrics serves /metrics on l until stop is called.
func serveMetrics(l net.Listener, a *agent.Agent, exp *otlpout.Exporter) (stop func()) {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		var es *otlpout.ExportStats
		if exp != nil {
			st := exp.Stats()
			es = &st
		}
		writeMetrics(w, a.Published(), es, selfCPU())
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	return func() { srv.Close() }
}

// selfCPU is this process's user and system time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeMetrics writes the counts in Prometheus's text exposition format.
func writeMetrics(w io.Writer, st agent.Stats, es *otlpout.ExportStats, cpu time.Duration) error {
	var err error
	metric := func(name, typ, help string, v any, labels ...string) {
		if err != nil {
			return
		}
		if len(labels) == 0 || labels[0] == "first" {
			_, err = fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
			if len(labels) > 0 {
				labels = labels[1:]
			}
		}
		l := ""
		if len(labels) == 2 {
			l = fmt.Sprintf("{%s=%q}", labels[0], labels[1])
		}
		if err == nil {
			_, err = fmt.Fprintf(w, "%s%s %v\n", name, l, v)
		}
	}
	metric("golineage_agent_samples_total", "counter", "Samples read from the kernel.", st.Samples)
	metric("golineage_agent_samples_lost_total", "counter", "Samples the kernel dropped: the ring buffer was full.", st.Lost)
	metric("golineage_agent_samples_without_lineage_total", "counter", "Samples kept without lineage: a torn or malformed record.", st.Torn+st.Malformed)
	metric("golineage_agent_samples_without_labels_total", "counter", "Samples whose goroutine's pprof labels could not be read.", st.NoLabels)
	metric("golineage_agent_parked_reads_total", "counter", "Reads of a target's parked goroutines, for its off-CPU profile.", st.ParkedReads)
	metric("golineage_agent_parked_slow_total", "counter", "Reads of parked goroutines that ran out of time: the process's next read waits longer.", st.ParkedSlow)
	metric("golineage_agent_parked_failed_total", "counter", "Targets whose parked goroutines could not be read: their off-CPU profile stopped.", st.ParkedFailed)
	metric("golineage_agent_profiles_total", "counter", "Profiles handed to the exporter or written.", st.Profiles)
	metric("golineage_agent_targets", "gauge", "Processes profiled now.", st.Targets)
	metric("golineage_agent_targets_started_total", "counter", "Processes the agent started profiling.", st.Started)
	metric("golineage_agent_targets_exited_total", "counter", "Targets that exited.", st.Exited)
	metric("golineage_agent_processes_skipped_total", "counter", "Processes not profiled, by why.", st.Upstream, "first", "kind", "upstream_go")
	metric("golineage_agent_processes_skipped_total", "counter", "", st.NotGo, "kind", "not_go")
	metric("golineage_agent_processes_failed_total", "counter", "Processes that could not be opened.", st.Failed)
	metric("golineage_agent_cpu_seconds_total", "counter", "The agent's user and system CPU time.", cpu.Seconds())
	if es != nil {
		metric("golineage_agent_otlp_batches_total", "counter", "OTLP requests the endpoint accepted.", es.Batches)
		metric("golineage_agent_otlp_profiles_total", "counter", "Profiles the endpoint accepted.", es.Profiles)
		metric("golineage_agent_otlp_retries_total", "counter", "Sends tried again.", es.Retries)
		metric("golineage_agent_otlp_dropped_total", "counter", "Profiles dropped: queue full, refused, or retries ran out.", es.Dropped)
		metric("golineage_agent_otlp_queued_bytes", "gauge", "Encoded profiles waiting to be sent.", es.QueuedBytes)
	}
	if err != nil && errors.Is(err, syscall.EPIPE) {
		return nil
	}
	return err
}
