// Package salt is rewritten by the harness before every timed build of
// buildprog, so that the program's own packages (which all import it) are
// recompiled while the standard library comes from the build cache.
package salt

// Salt differs between builds.
const Salt = "0"
