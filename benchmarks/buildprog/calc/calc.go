// Package calc evaluates arithmetic expressions over named variables.
package calc

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"

	"fpsafe/benchmarks/buildprog/internal/salt"
)

// Version identifies the build.
var Version = "calc-" + salt.Salt

type tokenKind int

const (
	tokNum tokenKind = iota
	tokIdent
	tokOp
	tokLParen
	tokRParen
	tokEOF
)

type token struct {
	kind tokenKind
	text string
	num  float64
}

func lex(src string) ([]token, error) {
	var toks []token
	for i := 0; i < len(src); {
		c := rune(src[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case unicode.IsDigit(c) || c == '.':
			j := i
			for j < len(src) && (unicode.IsDigit(rune(src[j])) || src[j] == '.' || src[j] == 'e') {
				j++
			}
			v, err := strconv.ParseFloat(src[i:j], 64)
			if err != nil {
				return nil, fmt.Errorf("calc: bad number %q", src[i:j])
			}
			toks = append(toks, token{kind: tokNum, text: src[i:j], num: v})
			i = j
		case unicode.IsLetter(c):
			j := i
			for j < len(src) && (unicode.IsLetter(rune(src[j])) || unicode.IsDigit(rune(src[j]))) {
				j++
			}
			toks = append(toks, token{kind: tokIdent, text: src[i:j]})
			i = j
		case strings.ContainsRune("+-*/^%", c):
			toks = append(toks, token{kind: tokOp, text: string(c)})
			i++
		case c == '(':
			toks = append(toks, token{kind: tokLParen, text: "("})
			i++
		case c == ')':
			toks = append(toks, token{kind: tokRParen, text: ")"})
			i++
		default:
			return nil, fmt.Errorf("calc: unexpected %q at %d", c, i)
		}
	}
	return append(toks, token{kind: tokEOF}), nil
}

// Expr is a parsed expression.
type Expr interface {
	Eval(env map[string]float64) (float64, error)
	String() string
}

type num float64
type ident string
type unary struct {
	op string
	x  Expr
}
type binary struct {
	op   string
	l, r Expr
}
type call struct {
	fn   string
	args []Expr
}

func (n num) Eval(map[string]float64) (float64, error) { return float64(n), nil }
func (n num) String() string                           { return strconv.FormatFloat(float64(n), 'g', -1, 64) }
func (id ident) Eval(env map[string]float64) (float64, error) {
	v, ok := env[string(id)]
	if !ok {
		return 0, fmt.Errorf("calc: undefined %s", string(id))
	}
	return v, nil
}
func (id ident) String() string { return string(id) }
func (u unary) Eval(env map[string]float64) (float64, error) {
	v, err := u.x.Eval(env)
	return -v, err
}
func (u unary) String() string { return "(-" + u.x.String() + ")" }
func (b binary) Eval(env map[string]float64) (float64, error) {
	l, err := b.l.Eval(env)
	if err != nil {
		return 0, err
	}
	r, err := b.r.Eval(env)
	if err != nil {
		return 0, err
	}
	switch b.op {
	case "+":
		return l + r, nil
	case "-":
		return l - r, nil
	case "*":
		return l * r, nil
	case "/":
		if r == 0 {
			return 0, fmt.Errorf("calc: division by zero in %s", b)
		}
		return l / r, nil
	case "%":
		return math.Mod(l, r), nil
	case "^":
		return math.Pow(l, r), nil
	}
	return 0, fmt.Errorf("calc: unknown operator %s", b.op)
}
func (b binary) String() string { return "(" + b.l.String() + " " + b.op + " " + b.r.String() + ")" }

var funcs = map[string]func(...float64) (float64, error){
	"sqrt": func(a ...float64) (float64, error) { return math.Sqrt(a[0]), nil },
	"max": func(a ...float64) (float64, error) {
		m := math.Inf(-1)
		for _, v := range a {
			m = math.Max(m, v)
		}
		return m, nil
	},
	"min": func(a ...float64) (float64, error) {
		m := math.Inf(1)
		for _, v := range a {
			m = math.Min(m, v)
		}
		return m, nil
	},
}

func (c call) Eval(env map[string]float64) (float64, error) {
	f, ok := funcs[c.fn]
	if !ok || len(c.args) == 0 {
		return 0, fmt.Errorf("calc: bad call %s", c)
	}
	vals := make([]float64, len(c.args))
	for i, a := range c.args {
		v, err := a.Eval(env)
		if err != nil {
			return 0, err
		}
		vals[i] = v
	}
	return f(vals...)
}
func (c call) String() string {
	parts := make([]string, len(c.args))
	for i, a := range c.args {
		parts[i] = a.String()
	}
	return c.fn + "(" + strings.Join(parts, ", ") + ")"
}

type parser struct {
	toks []token
	pos  int
}

var prec = map[string]int{"+": 1, "-": 1, "*": 2, "/": 2, "%": 2, "^": 3}

// Parse parses an expression.
func Parse(src string) (Expr, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	e, err := p.expr(1)
	if err != nil {
		return nil, err
	}
	if p.toks[p.pos].kind != tokEOF {
		return nil, fmt.Errorf("calc: trailing %q", p.toks[p.pos].text)
	}
	return e, nil
}

func (p *parser) expr(min int) (Expr, error) {
	l, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.toks[p.pos]
		pr, ok := prec[t.text]
		if t.kind != tokOp || !ok || pr < min {
			return l, nil
		}
		p.pos++
		next := pr + 1
		if t.text == "^" {
			next = pr
		}
		r, err := p.expr(next)
		if err != nil {
			return nil, err
		}
		l = binary{op: t.text, l: l, r: r}
	}
}

func (p *parser) primary() (Expr, error) {
	t := p.toks[p.pos]
	p.pos++
	switch t.kind {
	case tokNum:
		return num(t.num), nil
	case tokIdent:
		if p.toks[p.pos].kind != tokLParen {
			return ident(t.text), nil
		}
		p.pos++
		var args []Expr
		for p.toks[p.pos].kind != tokRParen {
			a, err := p.expr(1)
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			if p.toks[p.pos].kind == tokEOF {
				return nil, fmt.Errorf("calc: unclosed call to %s", t.text)
			}
		}
		p.pos++
		return call{fn: t.text, args: args}, nil
	case tokOp:
		if t.text == "-" {
			x, err := p.primary()
			return unary{op: "-", x: x}, err
		}
	case tokLParen:
		e, err := p.expr(1)
		if err != nil {
			return nil, err
		}
		if p.toks[p.pos].kind != tokRParen {
			return nil, fmt.Errorf("calc: missing )")
		}
		p.pos++
		return e, nil
	}
	return nil, fmt.Errorf("calc: unexpected %q", t.text)
}
