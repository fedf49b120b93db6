//go:build !unix

package agent

import "io"

// outputGone is never closed where the agent does not run on hosts: agents
// are built for Linux only (scripts/build-agents.sh).
func outputGone(io.Writer) <-chan struct{} { return make(chan struct{}) }
