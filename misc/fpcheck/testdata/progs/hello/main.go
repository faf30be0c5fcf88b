// Command hello is a minimal pure-Go program for fpcheck's binary tests.
package main

import "fmt"

func main() { fmt.Println("hello") }
