package hosts

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"time"
)

// Local runs scripts on this machine, with the same semantics as SSH.
type Local struct {
	Name string
}

var _ Transport = (*Local)(nil)

// localScriptVar carries a Local command's script to its sh.
const localScriptVar = "SANDBOXER_SCRIPT"

// RunPrivately is Run without input: every Local command is private
// (privateRunner).
func (l *Local) RunPrivately(ctx context.Context, script string, stdout io.Writer) error {
	return l.Run(ctx, script, nil, stdout)
}

func (l *Local) Host() string { return l.Name }

func (l *Local) Run(ctx context.Context, script string, stdin io.Reader, stdout io.Writer) error {
	// The script goes in the environment, which only its user can read,
	// rather than on the command line, which every user of the machine can
	// (/proc/PID/cmdline): a command may hold a file's content
	// (inlineWrite). It is unset before it runs, so nothing it starts
	// inherits it.
	cmd := exec.CommandContext(ctx, "sh", "-c", `_sbx_s=$`+localScriptVar+`; unset `+localScriptVar+`; eval "$_sbx_s"`)
	cmd.Env = append(os.Environ(), localScriptVar+"="+script)
	ownGroup(cmd)
	// Past cancellation, a child that escaped the group may still hold the
	// output open: Run does not wait for it.
	cmd.WaitDelay = time.Second
	if stdout == nil {
		stdout = io.Discard
	}
	cmd.Stdout = stdout
	stderr := &tailBuffer{n: stderrTailBytes}
	cmd.Stderr = stderr
	// Feed stdin ourselves rather than through cmd.Stdin: Wait would also
	// wait for that copy, and a caller may hold stdin open until the command
	// has exited (as SSH sessions allow).
	var in io.WriteCloser
	if stdin != nil {
		var err error
		if in, err = cmd.StdinPipe(); err != nil {
			return err
		}
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	if in != nil {
		go func() {
			_, _ = io.Copy(in, stdin)
			// Not awaited (stdin may stay open until Run returns), and
			// Wait closes the pipe too: the pipe holds no buffer to flush,
			// and an error here is at most that race (os.ErrClosed).
			_ = in.Close()
		}()
	}
	err := cmd.Wait()
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
