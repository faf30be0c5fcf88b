package pprofout

import (
	"fmt"
	"html"
	"io"
	"sort"
	"strings"

	"fpsafe.dev/misc/internal/stack"
)

// A flame graph: the stitched stacks merged into a tree, root (the oldest
// ancestor's "created by" frame, or a thread's root) at the bottom, each
// frame as wide as the samples under it. Lineage frames are drawn in blue so
// the part of the stack that no native unwinder could show stands out.

type flameNode struct {
	name     string
	count    int64
	children map[string]*flameNode
}

func (n *flameNode) child(name string) *flameNode {
	if c, ok := n.children[name]; ok {
		return c
	}
	c := &flameNode{name: name, children: map[string]*flameNode{}}
	n.children[name] = c
	return c
}

// WriteSVG writes the samples as a flame graph.
func (b *Builder) WriteSVG(w io.Writer, title string) error {
	root := &flameNode{name: "all", children: map[string]*flameNode{}}
	depth := 0
	for i, s := range b.samples {
		var names []string
		for _, lg := range b.stitched(s) {
			if lg.name != "" {
				names = append(names, lg.name)
				continue
			}
			for _, l := range lg.locs {
				names = append(names, stack.FuncName(l))
			}
		}
		n := root
		n.count += b.counts[i]
		for j := len(names) - 1; j >= 0; j-- {
			n = n.child(names[j])
			n.count += b.counts[i]
		}
		depth = max(depth, len(names))
	}
	const width, rowH = 1200.0, 16.0
	height := rowH*float64(depth+1) + 40
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="monospace" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&sb, `<rect width="100%%" height="100%%" fill="#f8f8f8"/><text x="6" y="16" font-size="14">%s (%d samples; blue: goroutine lineage)</text>`+"\n", html.EscapeString(title), root.count)
	var draw func(n *flameNode, x, w float64, level int)
	draw = func(n *flameNode, x, w float64, level int) {
		if w < 0.3 {
			return
		}
		y := height - rowH*float64(level+1) - 4
		fill := warm(n.name)
		if strings.HasPrefix(n.name, "created by ") {
			fill = "#7fa7e0"
		}
		fmt.Fprintf(&sb, `<g><title>%s (%d samples, %.1f%%)</title><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" stroke="#fff" stroke-width="0.5"/>`,
			html.EscapeString(n.name), n.count, 100*float64(n.count)/float64(max(root.count, 1)), x, y, w, rowH-1, fill)
		if chars := int(w / 6.6); chars >= 3 {
			label := n.name
			if len(label) > chars {
				label = label[:chars-2] + ".."
			}
			fmt.Fprintf(&sb, `<text x="%.1f" y="%.1f">%s</text>`, x+2, y+11, html.EscapeString(label))
		}
		sb.WriteString("</g>\n")
		kids := make([]*flameNode, 0, len(n.children))
		for _, c := range n.children {
			kids = append(kids, c)
		}
		sort.Slice(kids, func(i, j int) bool { return kids[i].name < kids[j].name })
		cx := x
		for _, c := range kids {
			cw := w * float64(c.count) / float64(n.count)
			draw(c, cx, cw, level+1)
			cx += cw
		}
	}
	draw(root, 0, width, 0)
	sb.WriteString("</svg>\n")
	_, err := io.WriteString(w, sb.String())
	return err
}

func warm(name string) string {
	h := uint32(2166136261)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint32(name[i])) * 16777619
	}
	return fmt.Sprintf("rgb(%d,%d,%d)", 205+h%50, 80+(h>>8)%120, 40+(h>>16)%50)
}
