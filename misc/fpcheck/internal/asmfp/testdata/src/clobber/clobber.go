// Package clobber holds assembly for the asmfp analyzers' tests.
package clobber

func f()
