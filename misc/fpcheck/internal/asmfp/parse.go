package asmfp

import (
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// An asmFunc is one TEXT block of a Go assembly file.
type asmFunc struct {
	name     string // pclntab form: pkg.name, static symbols without <>
	file     string
	line     int // TEXT line
	topframe bool
	noframe  bool
	frame    int // frame size, -1 if not a constant
	linkNote bool
	insts    []*inst
}

// frameless reports whether the assembler gives the function no frame record
// (no save of the caller's frame pointer in a prologue).
func (f *asmFunc) frameless() bool { return f.noframe || f.frame == 0 }

// An inst is one instruction, after macro expansion.
type inst struct {
	line     int    // source line (of the macro use, for expanded lines)
	text     string // the instruction, without comment
	op       string
	args     []string
	labels   []string // labels attached to this instruction
	linkNote bool     // the line carries an fpcheck:link annotation
}

// dst returns the last operand, the destination in Go assembly.
func (in *inst) dst() string {
	if len(in.args) == 0 {
		return ""
	}
	return in.args[len(in.args)-1]
}

var (
	textRE   = regexp.MustCompile(`^TEXT\s+([^\s,(]+)\(SB\)\s*(?:,\s*([^,$]*?)\s*)?(?:,\s*\$(-?[0-9]+|[^-,\s]+)(?:-[^\s]*)?)?\s*$`)
	labelRE  = regexp.MustCompile(`^([A-Za-z_.][A-Za-z0-9_.]*)\s*:`)
	defineRE = regexp.MustCompile(`(?s)^#\s*define\s+([A-Za-z_][A-Za-z0-9_]*)(\(([^)]*)\))?\s*(.*)$`)
)

// LinkAnnotation marks a deliberate frame-pointer link in assembly source, on
// the TEXT line, the stack switch or the call.
const LinkAnnotation = "fpcheck:link"

type macro struct {
	params []string
	body   string
}

type parser struct {
	goos, goarch string
	pkgPath      string
	macros       map[string]*macro
	defined      map[string]bool
	included     map[string]bool
}

// parseFile parses the assembly in content (file name fname).
func parseFile(fname string, content []byte, pkgPath, goos, goarch string) []*asmFunc {
	p := &parser{goos: goos, goarch: goarch, pkgPath: pkgPath, macros: map[string]*macro{},
		defined: map[string]bool{"GOOS_" + goos: true, "GOARCH_" + goarch: true}, included: map[string]bool{}}
	lines := p.preprocess(fname, string(content), 0)
	var funcs []*asmFunc
	var cur *asmFunc
	var pending []string
	for _, l := range lines {
		code := l.code
		if m := textRE.FindStringSubmatch(code); m != nil {
			cur = &asmFunc{name: p.symName(m[1]), file: fname, line: l.line, frame: -1, linkNote: l.link}
			flags := m[2]
			cur.topframe = strings.Contains(flags, "TOPFRAME")
			cur.noframe = strings.Contains(flags, "NOFRAME")
			if n, err := strconv.Atoi(m[3]); err == nil {
				cur.frame = n
			} else if m[3] == "" {
				cur.frame = 0
			}
			funcs = append(funcs, cur)
			pending = nil
			continue
		}
		if strings.HasPrefix(code, "DATA") || strings.HasPrefix(code, "GLOBL") {
			cur = nil
			continue
		}
		if cur == nil {
			continue
		}
		for {
			m := labelRE.FindStringSubmatch(code)
			if m == nil {
				break
			}
			pending = append(pending, m[1])
			code = strings.TrimSpace(code[len(m[0]):])
		}
		if code == "" {
			continue
		}
		op, rest, _ := strings.Cut(code, " ")
		if i := strings.IndexAny(op, "\t"); i >= 0 {
			op, rest = op[:i], op[i:]+" "+rest
		}
		in := &inst{line: l.line, text: code, op: strings.ToUpper(op), args: splitArgs(rest), labels: pending, linkNote: l.link}
		pending = nil
		cur.insts = append(cur.insts, in)
	}
	return funcs
}

// symName converts an assembly symbol to its pclntab name.
func (p *parser) symName(s string) string {
	s = strings.ReplaceAll(s, "∕", "/")
	if i := strings.Index(s, "<"); i >= 0 {
		s = s[:i]
	}
	if strings.HasPrefix(s, "·") {
		s = p.pkgPath + s
	}
	return strings.ReplaceAll(s, "·", ".")
}

func splitArgs(s string) []string {
	var args []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				args = append(args, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if last := strings.TrimSpace(s[start:]); last != "" || len(args) > 0 {
		args = append(args, last)
	}
	return args
}

type srcLine struct {
	line int
	code string
	link bool
}

// preprocess strips comments, follows #include of files next to fname,
// evaluates #ifdef/#ifndef/#else/#endif and expands #define macros. Each
// resulting statement keeps the line it came from in fname.
func (p *parser) preprocess(fname, content string, depth int) []srcLine {
	var out []srcLine
	raw := strings.Split(content, "\n")
	var cond []bool // stack of "active" flags
	active := func() bool {
		for _, c := range cond {
			if !c {
				return false
			}
		}
		return true
	}
	inBlock := false
	for i := 0; i < len(raw); i++ {
		lineno := i + 1
		text := raw[i]
		// Join continuation lines (macro bodies).
		for strings.HasSuffix(strings.TrimRight(text, " \t"), `\`) && i+1 < len(raw) {
			text = strings.TrimSuffix(strings.TrimRight(text, " \t"), `\`) + "\n" + raw[i+1]
			i++
		}
		link := strings.Contains(text, LinkAnnotation)
		text = stripComments(text, &inBlock)
		t := strings.TrimSpace(text)
		if strings.HasPrefix(t, "#") {
			d := strings.Fields(strings.TrimPrefix(t, "#"))
			if len(d) == 0 {
				continue
			}
			switch d[0] {
			case "ifdef", "ifndef":
				v := len(d) > 1 && p.defined[d[1]]
				cond = append(cond, v == (d[0] == "ifdef"))
			case "else":
				if len(cond) > 0 {
					cond[len(cond)-1] = !cond[len(cond)-1]
				}
			case "endif":
				if len(cond) > 0 {
					cond = cond[:len(cond)-1]
				}
			case "define":
				if active() {
					if m := defineRE.FindStringSubmatch(t); m != nil {
						mac := &macro{body: m[4]}
						if m[2] != "" {
							for _, a := range strings.Split(m[3], ",") {
								if a = strings.TrimSpace(a); a != "" {
									mac.params = append(mac.params, a)
								}
							}
						}
						p.macros[m[1]] = mac
						p.defined[m[1]] = true
					}
				}
			case "undef":
				if len(d) > 1 {
					delete(p.macros, d[1])
					delete(p.defined, d[1])
				}
			case "include":
				if active() && len(d) > 1 && depth < 4 {
					inc := strings.Trim(d[1], `"<>`)
					path := filepath.Join(filepath.Dir(fname), inc)
					if !p.included[path] {
						p.included[path] = true
						if data, err := os.ReadFile(path); err == nil {
							// Only definitions matter from headers.
							p.preprocess(path, string(data), depth+1)
						}
					}
				}
			}
			continue
		}
		if !active() {
			continue
		}
		for _, stmt := range p.expand(t, 0) {
			out = append(out, srcLine{line: lineno, code: stmt, link: link})
		}
	}
	return out
}

func stripComments(s string, inBlock *bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if *inBlock {
			if strings.HasPrefix(s[i:], "*/") {
				*inBlock = false
				i++
			}
			continue
		}
		if strings.HasPrefix(s[i:], "//") {
			// Skip to the end of this physical line.
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				break
			}
			i += j - 1
			continue
		}
		if strings.HasPrefix(s[i:], "/*") {
			*inBlock = true
			i++
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

var identRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*(\(([^)]*)\))?\s*$`)

// expand splits a source line into statements and expands macros.
func (p *parser) expand(t string, depth int) []string {
	var out []string
	for _, stmt := range strings.FieldsFunc(t, func(r rune) bool { return r == ';' || r == '\n' }) {
		stmt = strings.TrimSpace(stmt)
		if stmt == "" {
			continue
		}
		// A label may precede a macro use.
		prefix := ""
		if m := labelRE.FindStringSubmatch(stmt); m != nil && !strings.HasPrefix(stmt, "TEXT") {
			prefix = m[0] + " "
			stmt = strings.TrimSpace(stmt[len(m[0]):])
		}
		m := identRE.FindStringSubmatch(stmt)
		var mac *macro
		if m == nil {
			// NAME(args) with args containing parens, or NAME(x) followed by nothing.
			if i := strings.IndexByte(stmt, '('); i > 0 && strings.HasSuffix(stmt, ")") {
				if mm := p.macros[stmt[:i]]; mm != nil {
					m = []string{stmt, stmt[:i], stmt[i:], stmt[i+1 : len(stmt)-1]}
				}
			}
		}
		if m != nil {
			mac = p.macros[m[1]]
		}
		if mac == nil || depth > 8 {
			out = append(out, prefix+stmt)
			continue
		}
		body := mac.body
		if len(mac.params) > 0 {
			vals := splitArgs(m[3])
			for i, param := range mac.params {
				v := ""
				if i < len(vals) {
					v = vals[i]
				}
				body = regexp.MustCompile(`\b`+regexp.QuoteMeta(param)+`\b`).ReplaceAllLiteralString(body, v)
			}
		}
		exp := p.expand(body, depth+1)
		if prefix != "" {
			if len(exp) == 0 {
				exp = []string{"NOP"}
			}
			exp[0] = prefix + exp[0]
		}
		out = append(out, exp...)
	}
	return out
}

// posOf returns the position of the start of line in tf.
func posOf(tf *token.File, line int) token.Pos {
	if line < 1 || line > tf.LineCount() {
		return tf.Pos(0)
	}
	return tf.LineStart(line)
}
