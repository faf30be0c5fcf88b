package asmfp

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"
)

func TestAMD64(t *testing.T) {
	t.Setenv("GOARCH", "amd64")
	run(t)
}

func TestARM64(t *testing.T) {
	t.Setenv("GOARCH", "arm64")
	run(t)
}

func run(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), TopFrame, "topframe")
	analysistest.Run(t, analysistest.TestData(), StackSwitch, "stackswitch")
	analysistest.Run(t, analysistest.TestData(), Clobber, "clobber")
}
