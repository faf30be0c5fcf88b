package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// The tools all.bash needs are listed once, in .ci/tools: a command and the
// Debian package that provides it per line. install brings what is missing
// before the first step (all.bash), and the tools step checks them after
// make and says in the summary what it found and what install added.

// A tool is one line of the tools file.
type tool struct{ command, pkg string }

// readTools parses a tools file: "COMMAND PACKAGE" lines, # comments.
func readTools(toolsFile string) ([]tool, error) {
	f, err := os.Open(toolsFile)
	if err != nil {
		return nil, fmt.Errorf("reading the tool list: %w", err)
	}
	defer f.Close()
	var tools []tool
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want COMMAND PACKAGE, have %q", toolsFile, n, line)
		}
		tools = append(tools, tool{fields[0], fields[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", toolsFile, err)
	}
	return tools, nil
}

// missingTools splits tools into the commands found on the PATH and the
// tools that are not.
func missingTools(tools []tool) (have []string, missing []tool) {
	for _, t := range tools {
		if _, err := exec.LookPath(t.command); err != nil {
			missing = append(missing, t)
		} else {
			have = append(have, t.command)
		}
	}
	return have, missing
}

// packages lists the distinct packages of tools, in order.
func packages(tools []tool) []string {
	var pkgs []string
	seen := map[string]bool{}
	for _, t := range tools {
		if !seen[t.pkg] {
			seen[t.pkg] = true
			pkgs = append(pkgs, t.pkg)
		}
	}
	return pkgs
}

func commands(tools []tool) []string {
	var cmds []string
	for _, t := range tools {
		cmds = append(cmds, t.command)
	}
	return cmds
}

// checkTools appends the tools step's records to out: pass when every
// command listed in the tools file is on the PATH, skip naming the missing
// ones and their packages otherwise; then a note saying how many commands
// it found and which packages install added (listed in the file installed,
// if it exists).
func checkTools(toolsFile, installed, out string) error {
	tools, err := readTools(toolsFile)
	if err != nil {
		return err
	}
	have, missing := missingTools(tools)
	rec := fmt.Sprintf("pass\ttools\t0\t%s\n", strings.Join(have, " "))
	if len(missing) > 0 {
		var names []string
		for _, t := range missing {
			names = append(names, fmt.Sprintf("%s (package %s)", t.command, t.pkg))
		}
		rec = fmt.Sprintf("skip\ttools\t0\tnot installed: %s\n", strings.Join(names, ", "))
	}
	note := fmt.Sprintf("found %d of %d commands", len(have), len(tools))
	if installed != "" {
		data, err := os.ReadFile(installed)
		if err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("reading the installed list: %w", err)
		}
		if pkgs := strings.Fields(string(data)); len(pkgs) > 0 {
			note += "; all.bash installed " + strings.Join(pkgs, " ")
		} else {
			note += "; all.bash installed nothing"
		}
	}
	rec += fmt.Sprintf("note\ttools\t0\t%s\n", note)
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

// An installer runs the package manager. Tests replace its fields.
type installer struct {
	euid     int
	lookPath func(string) (string, error)
	// run runs a command with its output to w and returns its error.
	run func(w io.Writer, name string, args ...string) error
}

var hostInstaller = installer{
	euid:     os.Geteuid(),
	lookPath: exec.LookPath,
	run: func(w io.Writer, name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Stdout, cmd.Stderr = w, w
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.Run()
	},
}

// canSudo reports whether sudo runs commands as root without a password.
func (in installer) canSudo() bool {
	if _, err := in.lookPath("sudo"); err != nil {
		return false
	}
	return in.run(io.Discard, "sudo", "-n", "true") == nil
}

// errCannotInstall is install's error when tools are missing and this
// user cannot install them.
type errCannotInstall struct{ cmds, pkgs []string }

func (e errCannotInstall) Error() string {
	return fmt.Sprintf("not installed: %s; install them with: sudo apt-get install -y %s (or run with ALLBASH_ALLOW_SKIP=1 to skip what needs them)",
		strings.Join(e.cmds, " "), strings.Join(e.pkgs, " "))
}

// install installs the packages of the tools the PATH lacks with apt-get,
// as root or through sudo without a password, saying on stdout what it
// installs; the package manager's output goes to logw. It writes the
// packages it installed, one per line, to state (if not ""). Without
// apt-get or the right to use it, it returns errCannotInstall naming the
// one command that would.
func (in installer) install(toolsFile, state string, stdout, logw io.Writer) error {
	tools, err := readTools(toolsFile)
	if err != nil {
		return err
	}
	writeState := func(pkgs []string) error {
		if state == "" {
			return nil
		}
		s := strings.Join(pkgs, "\n")
		if s != "" {
			s += "\n"
		}
		if err := os.WriteFile(state, []byte(s), 0o666); err != nil {
			return fmt.Errorf("writing the installed list: %w", err)
		}
		return nil
	}
	_, missing := missingTools(tools)
	if len(missing) == 0 {
		fmt.Fprintf(stdout, "all.bash: the %d commands .ci/tools lists are installed\n", len(tools))
		return writeState(nil)
	}
	cmds, pkgs := commands(missing), packages(missing)
	var sudo []string
	_, aptErr := in.lookPath("apt-get")
	switch {
	case aptErr != nil:
		return errCannotInstall{cmds, pkgs}
	case in.euid == 0:
	case in.canSudo():
		sudo = []string{"sudo", "-n"}
	default:
		return errCannotInstall{cmds, pkgs}
	}
	fmt.Fprintf(stdout, "all.bash: installing %s (for %s)\n", strings.Join(pkgs, " "), strings.Join(cmds, " "))
	apt := func(args ...string) error {
		argv := append(append(sudo[:len(sudo):len(sudo)], "apt-get"), args...)
		fmt.Fprintf(logw, "$ %s\n", strings.Join(argv, " "))
		return in.run(logw, argv[0], argv[1:]...)
	}
	if err := apt("update", "-qq"); err != nil {
		fmt.Fprintf(stdout, "all.bash: apt-get update failed (%v); installing from the lists this machine has\n", err)
	}
	ierr := apt(append([]string{"install", "-y", "-qq"}, pkgs...)...)
	if _, still := missingTools(missing); len(still) > 0 {
		if ierr == nil {
			ierr = fmt.Errorf("the packages installed, but the commands are still not on the PATH")
		}
		return fmt.Errorf("installing %s: %v; still not installed: %s", strings.Join(pkgs, " "), ierr, strings.Join(commands(still), " "))
	}
	return writeState(pkgs)
}
