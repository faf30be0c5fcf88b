package main

import (
	"bytes"
	"fmt"
	"path"
	"strings"
)

// A series is patches/series: the patches in order, each with the new files it introduces.
type series []seriesPatch

type seriesPatch struct {
	name  string   // file name under patches/
	files []string // GOROOT-relative paths of the new files it introduces, in order
}

const seriesHeader = `# The fork's patch series, in order: one patch file (under patches/) per line. Under a
# patch, tab-indented, the new files it introduces: GOROOT-relative paths, stored in this
# repository at the same path as the patch brings them. Written by ./fork extract; see
# doc/workflow.md.
`

// parseSeries parses a series file; name is used in errors.
func parseSeries(name string, data []byte) (series, error) {
	var s series
	seenPatch := map[string]int{}
	seenFile := map[string]int{}
	for i, line := range strings.Split(string(data), "\n") {
		ln := i + 1
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if strings.HasPrefix(line, "\t") {
			if len(s) == 0 {
				return nil, fmt.Errorf("%s:%d: new file %s is listed before any patch; indent files under the patch that introduces them", name, ln, trimmed)
			}
			if err := checkNewFilePath(trimmed); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, ln, err)
			}
			if prev, ok := seenFile[trimmed]; ok {
				return nil, fmt.Errorf("%s:%d: new file %s is listed twice (also on line %d); a file is introduced by one patch", name, ln, trimmed, prev)
			}
			seenFile[trimmed] = ln
			s[len(s)-1].files = append(s[len(s)-1].files, trimmed)
			continue
		}
		if line != trimmed {
			return nil, fmt.Errorf("%s:%d: %q: a patch name starts at the line's beginning, a new file is indented by one tab", name, ln, line)
		}
		if strings.ContainsAny(trimmed, "/ \t") || !strings.HasSuffix(trimmed, ".patch") {
			return nil, fmt.Errorf("%s:%d: %q is not a patch file name (NNNN-name.patch under patches/)", name, ln, trimmed)
		}
		if prev, ok := seenPatch[trimmed]; ok {
			return nil, fmt.Errorf("%s:%d: patch %s is listed twice (also on line %d)", name, ln, trimmed, prev)
		}
		seenPatch[trimmed] = ln
		s = append(s, seriesPatch{name: trimmed})
	}
	return s, nil
}

// checkNewFilePath accepts clean GOROOT-relative paths under src/.
func checkNewFilePath(p string) error {
	if path.Clean(p) != p || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return fmt.Errorf("new file %q is not a clean GOROOT-relative path", p)
	}
	if !strings.HasPrefix(p, "src/") {
		return fmt.Errorf("new file %s is outside src/; the fork adds files only under GOROOT/src", p)
	}
	return nil
}

// format writes the series in the canonical form extract produces.
func (s series) format() []byte {
	var b bytes.Buffer
	b.WriteString(seriesHeader)
	for _, p := range s {
		b.WriteString(p.name + "\n")
		for _, f := range p.files {
			b.WriteString("\t" + f + "\n")
		}
	}
	return b.Bytes()
}

// slug turns a commit subject into the name part of a patch file name.
func slug(subject string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(subject) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		} else {
			dash = true
		}
	}
	s := b.String()
	if len(s) > 60 {
		s = strings.TrimRight(s[:60], "-")
	}
	return s
}

// splitPatch splits a patch file into its commit message and its diff.
// A patch file is "Subject: " and the message, a line "---", then a git diff (maybe empty).
func splitPatch(name string, data []byte) (msg string, diff []byte, err error) {
	text := string(data)
	if !strings.HasPrefix(text, "Subject: ") {
		return "", nil, fmt.Errorf("patches/%s: not a patch file (its first line must be 'Subject: ...')", name)
	}
	text = strings.TrimPrefix(text, "Subject: ")
	i := strings.Index(text, "\n---\n")
	if i < 0 {
		return "", nil, fmt.Errorf("patches/%s: no line '---' between the message and the diff", name)
	}
	return text[:i+1], []byte(text[i+len("\n---\n"):]), nil
}
