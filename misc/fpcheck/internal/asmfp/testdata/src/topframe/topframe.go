// Package topframe holds assembly for the asmfp analyzers' tests.
package topframe

func f()
