package hosts

import (
	"context"
	"errors"
	"io"
	"os/exec"
)

// Local runs scripts on this machine, with the same semantics as SSH.
type Local struct {
	Name string
}

var _ Transport = (*Local)(nil)

func (l *Local) Host() string { return l.Name }

func (l *Local) Run(ctx context.Context, script string, stdin io.Reader, stdout io.Writer) error {
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Stdin = stdin
	if stdout == nil {
		stdout = io.Discard
	}
	cmd.Stdout = stdout
	stderr := &tailBuffer{n: stderrTailBytes}
	cmd.Stderr = stderr
	err := cmd.Run()
	if err == nil {
		return nil
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && ctx.Err() == nil {
		return &CommandError{Host: l.Name, Script: script, ExitCode: exitErr.ExitCode(), Stderr: stderr.String()}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
