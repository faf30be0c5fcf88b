package gobin

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"runtime"
	"testing"
)

// TestRuntimeLayout checks the reader's named offsets against the runtime
// source of the toolchain running the tests (64-bit sizes).
func TestRuntimeLayout(t *testing.T) {
	for _, tc := range []struct {
		file, typ string
		want      map[string]int
	}{
		{"symtab.go", "moduledata", map[string]int{
			"pcHeader": mdPcHeader, "funcnametab": mdFuncnametab, "cutab": mdCutab,
			"filetab": mdFiletab, "pctab": mdPctab, "pclntable": mdPclntable, "ftab": mdFtab,
			"findfunctab": mdFindfunctab, "minpc": mdMinpc, "maxpc": mdMaxpc, "text": mdText,
			"etext": mdEtext, "noptrdata": mdNoptrdata, "rodata": mdRodata, "gofunc": mdGofunc,
			"epclntab": mdEpclntab, "textsectmap": mdPrefix,
		}},
		{"symtab.go", "pcHeader", map[string]int{
			"pad1": hdrPad1, "pad2": hdrPad2, "minLC": hdrMinLC, "ptrSize": hdrPtrSize, "nfunc": hdrNfunc,
			"funcnameOffset": hdrFuncnameOff, "cuOffset": hdrCuOff, "filetabOffset": hdrFiletabOff,
			"pctabOffset": hdrPctabOff, "pclnOffset": hdrPclnOff, "": hdrSize,
		}},
		{"runtime2.go", "_func", map[string]int{
			"entryOff": fEntryOff, "nameOff": fNameOff, "pcsp": fPcsp, "pcfile": fPcfile, "pcln": fPcln,
			"npcdata": fNpcdata, "cuOffset": fCuOffset, "funcID": fFuncID, "flag": fFlag,
			"nfuncdata": fNfuncdata, "": funcSize,
		}},
		{"symtabinl.go", "inlinedCall", map[string]int{
			"funcID": inlFuncID, "nameOff": inlNameOff, "parentPc": inlParentPC, "": inlinedCallSize,
		}},
	} {
		got := structOffsets(t, filepath.Join(runtime.GOROOT(), "src", "runtime", tc.file), tc.typ)
		for name, want := range tc.want {
			if off, ok := got[name]; !ok || off != want {
				t.Errorf("%s.%s: reader uses offset %d, runtime has %d (found %v)", tc.typ, name, want, off, ok)
			}
		}
	}
}

// structOffsets returns the offset of each field of struct typ in file, and
// its size under "", for the field types the runtime's tables use.
func structOffsets(t *testing.T, file, typ string) map[string]int {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var st *ast.StructType
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == typ {
			st, _ = ts.Type.(*ast.StructType)
		}
		return st == nil
	})
	if st == nil {
		t.Fatalf("%s: no struct %s", file, typ)
	}
	offs := map[string]int{}
	off := 0
	for _, fld := range st.Fields.List {
		size, align := fieldSize(t, fld.Type)
		off = (off + align - 1) &^ (align - 1)
		for _, n := range fld.Names {
			if _, dup := offs[n.Name]; !dup {
				offs[n.Name] = off
			}
			off += size
		}
		if fld.Names == nil {
			off += size
		}
	}
	offs[""] = off
	return offs
}

func fieldSize(t *testing.T, e ast.Expr) (size, align int) {
	switch e := e.(type) {
	case *ast.StarExpr, *ast.MapType:
		return 8, 8
	case *ast.ArrayType:
		if e.Len == nil {
			return 24, 8
		}
		n := e.Len.(*ast.BasicLit).Value
		es, ea := fieldSize(t, e.Elt)
		return es * int(n[0]-'0'), ea
	case *ast.Ident:
		switch e.Name {
		case "uintptr", "int", "uint", "string":
			if e.Name == "string" {
				return 16, 8
			}
			return 8, 8
		case "uint32", "int32":
			return 4, 4
		case "uint8", "byte", "bool":
			return 1, 1
		case "bitvector":
			return 16, 8 // n int32, bytedata *uint8
		}
	case *ast.SelectorExpr:
		switch e.Sel.Name {
		case "NotInHeap":
			return 0, 1
		case "FuncID", "FuncFlag":
			return 1, 1
		case "PCLnTabMagic":
			return 4, 4
		}
	}
	t.Fatalf("no size for field type %T %v", e, e)
	return 0, 0
}
