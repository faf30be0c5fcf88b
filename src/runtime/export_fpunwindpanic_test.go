// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package runtime

// FPUnwindPanickingWithSig reports fpUnwindPanicking for the calling
// goroutine with its sig set to sig, as between the signal that injects
// sigpanic and the panic that sigpanic starts.
func FPUnwindPanickingWithSig(sig uint32) bool {
	gp := getg()
	old := gp.sig
	gp.sig = sig
	panicking := fpUnwindPanicking(gp)
	gp.sig = old
	return panicking
}
