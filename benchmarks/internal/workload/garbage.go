package workload

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"strings"
)

// Garbage imitates golang.org/x/benchmarks/garbage: it parses Go source
// into syntax trees, a realistic mix of small pointerful objects, and keeps
// a fixed number of recent trees live so the collector works against a
// steady live heap while the rest becomes garbage.
type Garbage struct {
	src  []byte
	live []*ast.File
	next int
}

// NewGarbage returns a workload whose live heap holds keep parsed files.
func NewGarbage(keep int) *Garbage {
	return &Garbage{src: GoSource(200, 1), live: make([]*ast.File, keep)}
}

// Step parses the source once and replaces the oldest live tree.
func (g *Garbage) Step() {
	f, err := parser.ParseFile(token.NewFileSet(), "gen.go", g.src, parser.ParseComments)
	if err != nil {
		panic(err) // the source is generated; an error is a bug here
	}
	g.live[g.next] = f
	g.next = (g.next + 1) % len(g.live)
}

// GoSource generates a syntactically valid Go file of nfunc functions,
// deterministic for a given seed.
func GoSource(nfunc int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var b strings.Builder
	b.WriteString("// Code generated for a benchmark. DO NOT EDIT.\n\npackage gen\n\nimport \"fmt\"\n\n")
	for i := range nfunc {
		fmt.Fprintf(&b, "// F%d computes something of no consequence.\n", i)
		fmt.Fprintf(&b, "func F%d(xs []int, m map[string]int) (int, error) {\n", i)
		b.WriteString("\ttotal := 0\n")
		for j := range 3 + r.IntN(6) {
			switch r.IntN(4) {
			case 0:
				fmt.Fprintf(&b, "\tfor i, x := range xs {\n\t\tif x%%%d == %d {\n\t\t\ttotal += i * x\n\t\t}\n\t}\n", 2+r.IntN(7), r.IntN(2))
			case 1:
				fmt.Fprintf(&b, "\tif v, ok := m[\"k%d\"]; ok {\n\t\ttotal -= v << %d\n\t} else {\n\t\tm[\"k%d\"] = total\n\t}\n", j, r.IntN(5), j)
			case 2:
				fmt.Fprintf(&b, "\ts%d := struct{ a, b int; c string }{%d, total, fmt.Sprint(total)}\n\ttotal += s%d.a + len(s%d.c)\n", j, r.IntN(100), j, j)
			default:
				fmt.Fprintf(&b, "\tswitch total %% %d {\n\tcase 0:\n\t\ttotal++\n\tcase 1:\n\t\treturn total, fmt.Errorf(\"f%d: %%d\", total)\n\t}\n", 3+r.IntN(5), i)
			}
		}
		b.WriteString("\treturn total, nil\n}\n\n")
	}
	return []byte(b.String())
}
