// Command cgocb calls C, which calls back into Go, for fpcheck's binary tests.
package main

/*
extern void goCallback(int);
static void callC(int n) { goCallback(n); }
*/
import "C"

import "fmt"

var total int

//export goCallback
func goCallback(n C.int) { total += int(n) }

func main() {
	for i := 0; i < 10; i++ {
		C.callC(C.int(i))
	}
	fmt.Println(total)
}
