// Package report renders a store's contents and computed values as text
// or HTML.
package report

import (
	htmltemplate "html/template"
	"io"
	"text/template"

	"fpsafe/benchmarks/buildprog/internal/salt"
)

// Row is one line of a report.
type Row struct {
	Name  string
	Value string
	Note  string
}

// Report is what the templates render.
type Report struct {
	Title string
	Rows  []Row
}

const textTmpl = `{{.Title}} (build {{salt}})
{{range .Rows}}{{printf "%-20s %12s" .Name .Value}}{{if .Note}}  # {{.Note}}{{end}}
{{end}}`

const htmlTmpl = `<!doctype html><title>{{.Title}}</title><table>
{{range .Rows}}<tr><td>{{.Name}}</td><td>{{.Value}}</td><td>{{.Note}}</td></tr>
{{end}}</table><p>build {{salt}}</p>`

var funcs = map[string]any{"salt": func() string { return salt.Salt }}

var (
	textT = template.Must(template.New("text").Funcs(funcs).Parse(textTmpl))
	htmlT = htmltemplate.Must(htmltemplate.New("html").Funcs(funcs).Parse(htmlTmpl))
)

// Text writes r as aligned text.
func Text(w io.Writer, r Report) error { return textT.Execute(w, r) }

// HTML writes r as an HTML table.
func HTML(w io.Writer, r Report) error { return htmlT.Execute(w, r) }
