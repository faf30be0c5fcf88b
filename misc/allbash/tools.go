package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// checkTools appends one record to out: pass when every command listed in
// the tools file is on the PATH, skip naming the missing ones and their
// packages otherwise.
func checkTools(toolsFile, out string) error {
	f, err := os.Open(toolsFile)
	if err != nil {
		return fmt.Errorf("reading the tool list: %w", err)
	}
	defer f.Close()
	var have, missing []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return fmt.Errorf("%s:%d: want COMMAND PACKAGE, have %q", toolsFile, n, line)
		}
		if _, err := exec.LookPath(fields[0]); err != nil {
			missing = append(missing, fmt.Sprintf("%s (package %s)", fields[0], fields[1]))
		} else {
			have = append(have, fields[0])
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", toolsFile, err)
	}
	rec := fmt.Sprintf("pass\ttools\t0\t%s\n", strings.Join(have, " "))
	if len(missing) > 0 {
		rec = fmt.Sprintf("skip\ttools\t0\tnot installed: %s\n", strings.Join(missing, ", "))
	}
	w, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
	if err != nil {
		return fmt.Errorf("writing the tools record: %w", err)
	}
	if _, err := w.WriteString(rec); err != nil {
		w.Close()
		return fmt.Errorf("writing the tools record: %w", err)
	}
	return w.Close()
}
