package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// A gitRepo runs git on one repository with settings that make its output independent of
// the user's configuration, and fixed identities and dates so that the same inputs give
// the same commits.
type gitRepo struct {
	dir   string   // the work tree git runs in (-C)
	env   []string // extra environment: GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE...
	stdin []byte   // for the next run only
}

var gitConfig = []string{
	"-c", "core.quotePath=false", "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false",
	"-c", "diff.renames=false", "-c", "diff.external=", "-c", "color.ui=false",
	"-c", "core.autocrlf=false", "-c", "core.fileMode=true", "-c", "commit.gpgSign=false",
	"-c", "init.defaultBranch=main", "-c", "advice.detachedHead=false",
	"-c", "user.name=Go fork", "-c", "user.email=fork@localhost",
}

var gitFixedEnv = []string{
	"GIT_AUTHOR_NAME=Go fork", "GIT_AUTHOR_EMAIL=fork@localhost", "GIT_AUTHOR_DATE=2000-01-01T00:00:00Z",
	"GIT_COMMITTER_NAME=Go fork", "GIT_COMMITTER_EMAIL=fork@localhost", "GIT_COMMITTER_DATE=2000-01-01T00:00:00Z",
	"GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C",
}

// run runs git and returns its standard output; a failure's error carries git's stderr.
func (g *gitRepo) run(args ...string) (string, error) {
	cmd := exec.Command("git", append(append([]string{"-C", g.dir}, gitConfig...), args...)...)
	cmd.Env = append(append(os.Environ(), gitFixedEnv...), g.env...)
	if g.stdin != nil {
		cmd.Stdin = bytes.NewReader(g.stdin)
		g.stdin = nil
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i] + " ..."
		}
		return stdout.String(), fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, msg)
	}
	return stdout.String(), nil
}

// line runs git and returns its output's first line.
func (g *gitRepo) line(args ...string) (string, error) {
	out, err := g.run(args...)
	out, _, _ = strings.Cut(out, "\n")
	return out, err
}

// with returns a copy of g with more environment.
func (g *gitRepo) with(env ...string) *gitRepo {
	return &gitRepo{dir: g.dir, env: append(append([]string(nil), g.env...), env...)}
}

// nulList splits git's -z output.
func nulList(out string) []string {
	out = strings.TrimSuffix(out, "\x00")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\x00")
}
