package target

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestNSTIDs: this process is in no namespace of its own; a child in a
// new PID namespace (unshare, as root) is pid 1 there.
func TestNSTIDs(t *testing.T) {
	self := NewNSTIDs(os.Getpid())
	if self.InNamespace() || self.Of(os.Getpid()) != os.Getpid() {
		t.Errorf("this process: in a namespace %v, Of(pid) = %d", self.InNamespace(), self.Of(os.Getpid()))
	}
	if os.Geteuid() != 0 {
		t.Skip("skipping: unshare --pid needs root")
	}
	cmd := exec.Command("unshare", "--pid", "--fork", "--kill-child", "sh", "-c", "echo $$; exec sleep 60")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("skipping: unshare: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	if strings.TrimSpace(string(buf[:n])) != "1" {
		t.Fatalf("the shell in the new namespace says its pid is %q", buf[:n])
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task/" + strconv.Itoa(cmd.Process.Pid) + "/children")
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	ns := NewNSTIDs(child)
	if !ns.InNamespace() || ns.Of(child) != 1 {
		t.Errorf("child %d: in a namespace %v, Of = %d; want true, 1", child, ns.InNamespace(), ns.Of(child))
	}
	if got := ns.Of(1 << 30); got != 1<<30 {
		t.Errorf("Of an unknown thread = %d, want it unchanged", got)
	}
}
