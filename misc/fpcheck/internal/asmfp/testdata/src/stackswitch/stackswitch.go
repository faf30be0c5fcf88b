// Package stackswitch holds assembly for the asmfp analyzers' tests.
package stackswitch

func f()

func switchbase()
func switchbaselost()
