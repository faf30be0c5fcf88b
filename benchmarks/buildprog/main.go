// Command buildprog is the fixed program of the build suite: a small
// calculator over a key-value store, with an HTTP server and text and HTML
// reports. It exists to be compiled and linked; what it does matters only
// in that it pulls in a realistic share of the standard library (net/http,
// encoding/json, compress/gzip, crypto, templates).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"

	"fpsafe/benchmarks/buildprog/calc"
	"fpsafe/benchmarks/buildprog/report"
	"fpsafe/benchmarks/buildprog/store"
)

func main() {
	addr := flag.String("http", "", "serve the store on this address")
	html := flag.Bool("html", false, "write the report as HTML")
	flag.Parse()
	s := store.New()
	if *addr != "" {
		log.Fatal(http.ListenAndServe(*addr, s))
	}
	// Each input line is "name = expression"; expressions may use earlier names.
	env := map[string]float64{}
	var rep report.Report
	rep.Title = "buildprog " + calc.Version
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		name, src, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		name = strings.TrimSpace(name)
		e, err := calc.Parse(src)
		if err != nil {
			rep.Rows = append(rep.Rows, report.Row{Name: name, Note: err.Error()})
			continue
		}
		v, err := e.Eval(env)
		row := report.Row{Name: name, Value: strconv.FormatFloat(v, 'g', 6, 64), Note: e.String()}
		if err != nil {
			row.Value, row.Note = "", err.Error()
		} else {
			env[name] = v
			s.Put(name, row.Value)
		}
		rep.Rows = append(rep.Rows, row)
	}
	write := report.Text
	if *html {
		write = report.HTML
	}
	if err := write(os.Stdout, rep); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
