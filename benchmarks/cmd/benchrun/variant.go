package main

import (
	"fmt"
	"strings"
)

// A variant is a column of the comparison: a toolchain and settings for the
// processes it runs. Its spec is "TOOLCHAIN[+SETTING]...", TOOLCHAIN being
// "upstream" or "fork"; a SETTING "name=value" with a lower-case name is a
// GODEBUG setting, one with an upper-case name (GOGC=off) an environment
// variable.
type variant struct {
	spec      string
	toolchain string
	godebug   []string
	env       []string
}

func parseVariant(spec string) (variant, error) {
	parts := strings.Split(spec, "+")
	v := variant{spec: spec, toolchain: parts[0]}
	if v.toolchain != "upstream" && v.toolchain != "fork" {
		return v, fmt.Errorf("variant %q: toolchain must be upstream or fork", spec)
	}
	for _, p := range parts[1:] {
		name, _, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return v, fmt.Errorf("variant %q: setting %q is not name=value", spec, p)
		}
		if strings.ToUpper(name) == name {
			v.env = append(v.env, p)
		} else {
			v.godebug = append(v.godebug, p)
		}
	}
	return v, nil
}

// environ returns the environment for a process of this variant: base,
// then the run's own settings, then the variant's, with GODEBUG settings
// from both joined.
func (v variant) environ(base, runEnv []string) []string {
	env := append([]string(nil), base...)
	var godebug []string
	for _, e := range append(append([]string(nil), runEnv...), v.env...) {
		if val, ok := strings.CutPrefix(e, "GODEBUG="); ok {
			godebug = append(godebug, val)
			continue
		}
		env = append(env, e)
	}
	godebug = append(godebug, v.godebug...)
	if len(godebug) > 0 {
		env = append(env, "GODEBUG="+strings.Join(godebug, ","))
	}
	return env
}
