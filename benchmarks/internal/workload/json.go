package workload

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
)

// JSON imitates golang.org/x/benchmarks/json (and the go1 JSON benchmark it
// derives from): it encodes and decodes a generated tree of nodes shaped
// like the go1 benchmark's code.json.
type JSON struct {
	tree Tree
	data []byte
}

// Tree is the document's root.
type Tree struct {
	Tree     *Node  `json:"tree"`
	Username string `json:"username"`
}

// Node is one node of the document.
type Node struct {
	Name     string  `json:"name"`
	Kids     []*Node `json:"kids"`
	CLWeight float64 `json:"cl_weight"`
	Touches  int     `json:"touches"`
	MinT     int64   `json:"min_t"`
	MaxT     int64   `json:"max_t"`
	MeanT    int64   `json:"mean_t"`
}

// NewJSON returns a workload over a tree of about n nodes.
func NewJSON(n int) *JSON {
	r := rand.New(rand.NewPCG(2, 3))
	count := 0
	var gen func(depth int) *Node
	gen = func(depth int) *Node {
		count++
		nd := &Node{
			Name:     "node" + strconv.Itoa(count),
			CLWeight: r.Float64(),
			Touches:  r.IntN(1000),
			MinT:     r.Int64N(1 << 40),
			MaxT:     r.Int64N(1 << 40),
			MeanT:    r.Int64N(1 << 40),
		}
		for depth < 12 && count < n && r.IntN(10) < 7 {
			nd.Kids = append(nd.Kids, gen(depth+1))
		}
		return nd
	}
	root := &Node{Name: "root"}
	for count < n {
		root.Kids = append(root.Kids, gen(1))
	}
	j := &JSON{tree: Tree{Tree: root, Username: "bench"}}
	var err error
	if j.data, err = json.Marshal(&j.tree); err != nil {
		panic(err)
	}
	return j
}

// Size is the encoded document's size in bytes.
func (j *JSON) Size() int { return len(j.data) }

// Step decodes the document and encodes the result.
func (j *JSON) Step() {
	var t Tree
	if err := json.Unmarshal(j.data, &t); err != nil {
		panic(err)
	}
	out, err := json.Marshal(&t)
	if err != nil {
		panic(err)
	}
	if len(out) != len(j.data) {
		panic("workload.JSON: round trip changed the document's size")
	}
}
