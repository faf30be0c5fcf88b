// Package workflow holds the tests of the repository's ./fork tool (apply, extract, check):
// they run the tool against a small fake upstream tree in a scratch repository.
package workflow
