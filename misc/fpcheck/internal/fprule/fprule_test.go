package fprule

import "testing"

// TestRules runs effect sequences through the model: each ends with a call
// whose verdict is checked.
func TestRules(t *testing.T) {
	const fp, r1, r2 Reg = 5, 1, 2
	none := Effect{Def: NoReg, DefSrc: NoReg, FPSrc: NoReg, SPSrc: NoReg}
	with := func(f func(*Effect)) Effect { e := none; f(&e); return e }
	clear := with(func(e *Effect) { e.FP = FPClear })
	load := with(func(e *Effect) { e.FP = FPLoad })
	save := with(func(e *Effect) { e.FPSave = true })
	switchSP := with(func(e *Effect) { e.SP = SPSwitch })
	setup := with(func(e *Effect) { e.FP = FPFromSP })
	baseFrom := func(r Reg) Effect { return with(func(e *Effect) { e.FP, e.FPSrc = FPFromReg, r }) }
	spFrom := func(r Reg) Effect { return with(func(e *Effect) { e.SP, e.SPSrc = SPFromReg, r }) }
	offset := func(r Reg) Effect { return with(func(e *Effect) { e.Def, e.DefOffset = r, true }) }
	reload := func(r Reg) Effect { return with(func(e *Effect) { e.Def = r }) }
	root, plain, link := Function{Root: true}, Function{}, Function{Link: true}
	call := Call{Returns: true}
	for _, tc := range []struct {
		name    string
		f       Function
		effects []Effect
		c       Call
		want    Verdict
		unsaved bool // some effect wrote the frame pointer before it was saved
	}{
		{"root calls with FP live", root, nil, call, Verdict{Root: true}, false},
		{"root clears first", root, []Effect{save, clear}, call, Verdict{}, false},
		{"root links first", root, []Effect{save, load}, call, Verdict{}, false},
		{"root clears unsaved", root, []Effect{clear}, call, Verdict{}, true},
		{"root exempt callee", root, nil, Call{Returns: true, Exempt: true}, Verdict{}, false},
		{"root tail jump", root, nil, Call{}, Verdict{}, false},
		{"switch then call", plain, []Effect{switchSP}, call, Verdict{Switch: true}, false},
		{"switch in a documented link", link, []Effect{switchSP}, call, Verdict{}, false},
		{"switch, clear, call", plain, []Effect{switchSP, clear}, call, Verdict{}, true},
		{"switch, frame setup, call", plain, []Effect{switchSP, setup}, call, Verdict{}, false},
		{"switch and back", plain, []Effect{switchSP, switchSP}, call, Verdict{}, false},
		{"annotated switch", plain, []Effect{with(func(e *Effect) { e.SP, e.Link = SPSwitch, true })}, call, Verdict{}, false},
		{"copy of SP is not a switch", plain, []Effect{with(func(e *Effect) { e.Def, e.DefSrc = r1, SP }), spFrom(r1)}, call, Verdict{}, false},
		{"FP from the new SP's register", plain, []Effect{baseFrom(r1), offset(r1), spFrom(r1)}, call, Verdict{}, true},
		{"FP base reloaded", plain, []Effect{baseFrom(r1), reload(r1), spFrom(r1)}, call, Verdict{Switch: true}, true},
		{"FP base is another register", plain, []Effect{baseFrom(r1), spFrom(r2)}, call, Verdict{Switch: true}, true},
		{"new thread", plain, []Effect{with(func(e *Effect) { e.NewThread = true })}, call, Verdict{Switch: true}, false},
	} {
		s := Entry(fp, false)
		unsaved := false
		for _, e := range tc.effects {
			var ev Events
			s, ev = s.Apply(e)
			unsaved = unsaved || ev.UnsavedWrite
		}
		_, v := s.Call(tc.f, tc.c)
		if v != tc.want || unsaved != tc.unsaved {
			t.Errorf("%s: verdict %+v, unsaved write %v; want %+v, %v", tc.name, v, unsaved, tc.want, tc.unsaved)
		}
	}
}

func TestObj(t *testing.T) {
	for _, tc := range []struct {
		e       FPEffect
		derived bool
		want    ObjEffect
	}{
		{FPNone, false, ObjKeep}, {FPClear, false, ObjWrite}, {FPFromSP, false, ObjKeep},
		{FPFromReg, true, ObjKeep}, {FPFromReg, false, ObjWrite}, {FPRestore, false, ObjRestore},
		{FPLoad, false, ObjWrite}, {FPOther, false, ObjWrite},
	} {
		if got := tc.e.Obj(tc.derived); got != tc.want {
			t.Errorf("%d.Obj(%v) = %s, want %s", tc.e, tc.derived, got, tc.want)
		}
	}
}
