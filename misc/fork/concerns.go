package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The concern table: README.md's table of the fork's concerns names, in its second column,
// the patches that make each concern, by subject in backquotes, "..." standing for any text
// ("runtime: end the frame-pointer chain in ..."). check keeps it true to patches/series:
// every subject the table names is some patch's, and every patch is named by some row, so
// the table a reader starts from cannot name patches that are gone or leave new ones out.
var errConcernTable = errors.New("README.md's concern table does not match patches/series")

// concernHeader starts the concern table's header row.
const concernHeader = "| concern | patches (by subject) |"

// checkConcernTable checks README.md's concern table against the series' subjects. A
// repository without the table (or without README.md) has nothing to check.
func checkConcernTable(top string, s series) error {
	data, err := os.ReadFile(filepath.Join(top, "README.md"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	patterns, ok := concernPatterns(string(data))
	if !ok {
		return nil
	}
	var subjects []string
	for _, p := range s {
		msg, _, err := readPatchFile(top, p.name)
		if err != nil {
			return err
		}
		subject, _, _ := strings.Cut(msg, "\n")
		subjects = append(subjects, subject)
	}
	var bad []string
	named := make([]bool, len(subjects))
	for _, pat := range patterns {
		re := subjectPattern(pat)
		found := false
		for i, subj := range subjects {
			if re.MatchString(subj) {
				found, named[i] = true, true
			}
		}
		if !found {
			bad = append(bad, fmt.Sprintf("`%s` is no patch's subject", pat))
		}
	}
	for i, p := range s {
		if !named[i] {
			bad = append(bad, fmt.Sprintf("patches/%s (%q) is in no row", p.name, subjects[i]))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s (name each patch by its subject in the row of its concern)", errConcernTable, strings.Join(bad, "; "))
	}
	return nil
}

// concernPatterns returns the subjects, in backquotes, of the second column of the concern
// table in readme; ok is false if readme has no such table.
func concernPatterns(readme string) (patterns []string, ok bool) {
	lines := strings.Split(readme, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, concernHeader) {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, false
	}
	for _, l := range lines[start+1:] {
		if !strings.HasPrefix(l, "|") {
			break
		}
		cells := strings.Split(l, "|")
		if len(cells) < 3 || strings.Trim(cells[2], " -") == "" {
			continue // the delimiter row, or a concern made by no patch
		}
		for _, m := range backquoted.FindAllStringSubmatch(cells[2], -1) {
			patterns = append(patterns, m[1])
		}
	}
	return patterns, true
}

var backquoted = regexp.MustCompile("`([^`]+)`")

// subjectPattern is the regular expression of a subject in the table: "..." matches any
// text, spaces around it included.
func subjectPattern(pat string) *regexp.Regexp {
	parts := strings.Split(pat, "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(strings.TrimSpace(p))
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}
