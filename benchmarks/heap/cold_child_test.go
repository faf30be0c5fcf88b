package heap

import (
	"strings"
	"testing"
)

// TestTreeColdChild runs a BenchmarkTreeCold child and checks that every
// tree met new stacks: at rate 64 each tree of depth 6 samples about 127
// of its nodes, all under a prefix no other tree has.
func TestTreeColdChild(t *testing.T) {
	const trees = 64
	r, err := coldChild(6, trees, 64)
	if err != nil {
		t.Fatal(err)
	}
	if r.wall <= 0 || r.cpu <= 0 {
		t.Errorf("child reported wall %v, CPU %v", r.wall, r.cpu)
	}
	if r.profileStacks < 50*trees {
		t.Errorf("%d trees left %d stacks in the profile, want at least %d", trees, r.profileStacks, 50*trees)
	}
	if r.bucketBytes == 0 {
		t.Error("the profile's buckets took no memory")
	}
}

// TestTreeColdChildBadSpec checks that a child with a bad specification
// fails with its reason.
func TestTreeColdChildBadSpec(t *testing.T) {
	for _, c := range []struct {
		depth, trees int
		want         string
	}{
		{6, 1<<coldPrefixBits + 1, "distinct prefixes"},
	} {
		if _, err := coldChild(c.depth, c.trees, 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("coldChild(%d, %d, 0) = %v, want an error with %q", c.depth, c.trees, err, c.want)
		}
	}
	if err := coldChildMain("12 x"); err == nil || !strings.Contains(err.Error(), "want DEPTH TREES RATE") {
		t.Errorf("coldChildMain(%q) = %v", "12 x", err)
	}
}
