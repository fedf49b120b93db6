package agent

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// installHost is a remote host with no agent, whose upload (the one
// command with input) waits until release is closed, or its context ends.
type installHost struct {
	name    string
	release chan struct{}
	uploads chan string // each upload's host, as it starts
}

func (h *installHost) Host() string { return h.name }

func (h *installHost) Run(ctx context.Context, script string, stdin io.Reader, stdout io.Writer) error {
	switch {
	case strings.HasPrefix(script, "uname -sm"):
		_, err := io.WriteString(stdout, "Linux x86_64\n")
		return err
	case stdin != nil:
		h.uploads <- h.name
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
		_, err := io.Copy(io.Discard, stdin)
		return err
	}
	return nil
}

// One host's agent install, slow to upload, holds up no other host's, and
// a call waiting for it on the same host gives up with its context.
func TestInstallOnOneHostHoldsUpNoOther(t *testing.T) {
	if _, err := binaryFor("linux/amd64"); err != nil {
		t.Skip("no linux/amd64 agent binary here:", err)
	}
	c := NewClient()
	uploads := make(chan string, 4)
	slow := &installHost{name: "slow", release: make(chan struct{}), uploads: uploads}
	fast := &installHost{name: "fast", release: make(chan struct{}), uploads: uploads}
	close(fast.release)
	slowHost := &hosts.Host{Transport: slow, RootDir: "/srv/sandboxer"}
	fastHost := &hosts.Host{Transport: fast, RootDir: "/srv/sandboxer"}

	first := make(chan error, 1)
	go func() { _, err := c.agentPath(t.Context(), slowHost); first <- err }()
	if got := <-uploads; got != "slow" {
		t.Fatalf("first upload on %q", got)
	}
	// Another host installs while the slow one uploads.
	other := make(chan error, 1)
	go func() { _, err := c.agentPath(t.Context(), fastHost); other <- err }()
	select {
	case err := <-other:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(slow.release) // lets the test end
		t.Fatal("the other host's install waited for the slow one's upload")
	}
	// A second call on the slow host waits, and gives up with its context.
	waiting, give := context.WithCancel(t.Context())
	second := make(chan error, 1)
	go func() { _, err := c.agentPath(waiting, slowHost); second <- err }()
	give()
	select {
	case err := <-second:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the waiting call ended with %v, want its context's end", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a call waiting for another's install ignored its context")
	}
	close(slow.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if p, err := c.agentPath(t.Context(), slowHost); err != nil || !strings.HasPrefix(p, "/srv/sandboxer/.sandboxer/bin/"+installedPrefix) {
		t.Fatalf("after the install: %q, %v", p, err)
	}
}
