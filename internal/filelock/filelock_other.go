//go:build !unix

// Package filelock is the one advisory file lock the provider uses.
package filelock

import "errors"

// Lock is not available off unix: stores and ledgers need a unix machine.
func Lock(string, bool) (func(), error) {
	return nil, errors.New("file locking needs a unix system")
}
