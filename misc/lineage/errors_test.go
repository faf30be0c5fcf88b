package lineage_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"fpsafe.dev/misc/lineage"
)

// TestHelperSleeper is not a test: run by the error tests as a target (this
// test binary, built by the fork), it blocks until killed.
func TestHelperSleeper(t *testing.T) {
	if os.Getenv("LINEAGE_TEST_SLEEPER") != "1" {
		t.Skip("a target for the error tests")
	}
	os.Stdout.WriteString("ready\n")
	time.Sleep(time.Hour)
}

// startSleeper starts this test binary as a target that blocks.
func startSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSleeper$")
	cmd.Env = append(os.Environ(), "LINEAGE_TEST_SLEEPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func TestErrNoProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	for _, pid := range []int{cmd.Process.Pid, -1} {
		_, err := lineage.OpenPID(context.Background(), pid, nil)
		if !errors.Is(err, lineage.ErrNoProcess) || !errors.Is(err, syscall.ESRCH) {
			t.Errorf("OpenPID(%d): %v, want ErrNoProcess and ESRCH", pid, err)
		}
	}
}

func TestErrNotGo(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	time.Sleep(50 * time.Millisecond) // until sleep has run exec
	_, err := lineage.OpenPID(context.Background(), cmd.Process.Pid, nil)
	if !errors.Is(err, lineage.ErrNotGo) {
		t.Errorf("OpenPID of sleep: %v, want ErrNotGo", err)
	}
}

// TestErrExited: a process that exits after it was opened, and a zombie.
func TestErrExited(t *testing.T) {
	ctx := context.Background()
	cmd := startSleeper(t)
	p, err := lineage.OpenPID(ctx, cmd.Process.Pid, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.GoroutineStacks(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := p.Watch()
	if err != nil {
		t.Fatal(err)
	}
	if _, added, err := w.Changes(ctx); err != nil || len(added) == 0 {
		t.Fatalf("Watcher.Changes: %d added, %v", len(added), err)
	}
	cmd.Process.Kill()
	// A zombie: killed, not reaped yet.
	for try := 0; try < 100; try++ {
		if _, err := p.Goroutines(ctx); err != nil {
			if !errors.Is(err, lineage.ErrExited) {
				t.Errorf("Goroutines after exit: %v, want ErrExited", err)
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := lineage.OpenPID(ctx, cmd.Process.Pid, nil); !errors.Is(err, lineage.ErrExited) {
		t.Errorf("OpenPID of a zombie: %v, want ErrExited", err)
	}
	cmd.Wait()
	for _, read := range []func() error{
		func() error { _, err := p.GoroutineStacks(ctx); return err },
		func() error { _, err := p.Regions(ctx); return err },
		func() error { _, _, err := w.Changes(ctx); return err },
		func() error { return p.ReadAt(make([]byte, 8), 0x10000) },
	} {
		if err := read(); !errors.Is(err, lineage.ErrExited) {
			t.Errorf("read after the process was reaped: %v, want ErrExited", err)
		}
	}
}

func TestErrNoLineage(t *testing.T) {
	ctx := context.Background()
	p, err := lineage.OpenPID(ctx, os.Getpid(), &lineage.Options{NoLineage: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.GoroutineStacks(ctx); !errors.Is(err, lineage.ErrNoLineage) {
		t.Errorf("GoroutineStacks with NoLineage: %v, want ErrNoLineage", err)
	}
}

func TestClose(t *testing.T) {
	ctx := context.Background()
	p, err := lineage.OpenPID(ctx, os.Getpid(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
	if _, err := p.Goroutines(ctx); !errors.Is(err, lineage.ErrClosed) {
		t.Errorf("Goroutines after Close: %v, want ErrClosed", err)
	}
	if _, err := p.GoroutineStacks(ctx); !errors.Is(err, lineage.ErrClosed) {
		t.Errorf("GoroutineStacks after Close: %v, want ErrClosed", err)
	}
	if err := p.ReadAt(make([]byte, 8), 0x10000); !errors.Is(err, lineage.ErrClosed) {
		t.Errorf("ReadAt after Close: %v, want ErrClosed", err)
	}
	if _, err := p.ThreadIDs(); !errors.Is(err, lineage.ErrClosed) {
		t.Errorf("ThreadIDs after Close: %v, want ErrClosed", err)
	}
}

func TestErrPermission(t *testing.T) {
	if lineage.ErrPermission != fs.ErrPermission {
		t.Errorf("ErrPermission is not fs.ErrPermission")
	}
}
