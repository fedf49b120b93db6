package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// What sandboxer_command and sandboxer_exec both do: run a command in a
// service, and say how it failed.

// execRequest turns the arguments into a request; command is the one to
// run (the resource's destroy_command runs with the same arguments).
func (m *execArgs) execRequest(ctx context.Context, command types.List, diags *diag.Diagnostics) (backends.ExecRequest, time.Duration) {
	req := backends.ExecRequest{SandboxID: m.SandboxID.ValueString(), Service: m.Service.ValueString(),
		Env: stringMap(ctx, m.Env, diags), User: m.User.ValueString(), Workdir: m.Workdir.ValueString()}
	diags.Append(command.ElementsAs(ctx, &req.Command, false)...)
	timeout, _ := time.ParseDuration(defaultCommandTimeout)
	if t, err := time.ParseDuration(m.Timeout.ValueString()); err == nil && t > 0 { // validated at plan time
		timeout = t
	}
	return req, timeout
}

// checkAtPlan refuses, at plan time, an empty command, or one for a
// sandbox that exists but lacks the service; nothing is said while the
// sandbox is not known (created in the same apply) or not found. A sandbox
// stopped on purpose is refused at apply: the same apply may start it.
func (m *execArgs) checkAtPlan(ctx context.Context, d *providerData, diags *diag.Diagnostics) {
	if m.SandboxID.IsUnknown() || m.Service.IsUnknown() || m.Host.IsUnknown() || m.Command.IsUnknown() {
		return
	}
	var command []string
	diags.Append(m.Command.ElementsAs(ctx, &command, true)...)
	var sb *backends.Sandbox
	var err error
	if c, ok := d.cluster(m.Host.ValueString()); ok {
		sb, _, err = d.kube.Get(ctx, c, m.SandboxID.ValueString())
	} else {
		_, sb, err = d.locateSandbox(ctx, m.SandboxID.ValueString(), m.Host.ValueString())
	}
	if err != nil {
		return // said at apply, where it may exist by then
	}
	if err := backends.CheckExec(sb, m.Service.ValueString(), command); err != nil && !errors.Is(err, backends.ErrSandboxStopped) {
		diags.AddError("Unable to Run Command", err.Error())
	}
}

// runCommand runs req in its sandbox, found on m's host (or by asking the
// hosts), within timeout.
func runCommand(ctx context.Context, d *providerData, m *execArgs, req backends.ExecRequest, timeout time.Duration) (backends.ExecResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var res backends.ExecResult
	var err error
	if c, ok := d.cluster(m.Host.ValueString()); ok {
		res, err = d.kube.Exec(ctx, c, req)
	} else {
		var h *hosts.Host
		if h, _, err = d.locateSandbox(ctx, req.SandboxID, m.Host.ValueString()); err != nil {
			return backends.ExecResult{}, err
		}
		res, err = d.registry.Exec(ctx, h, req)
	}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("the command ran longer than its timeout (%s); every process it started in the container was killed: %w", timeout, err)
	}
	return res, err
}

// lastLines are the last n lines of out, for a failure's diagnostic.
func lastLines(out string, n int) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// exitError is a non-zero exit's diagnostic detail: the exit code, and the
// last lines unless they are to stay hidden.
func exitError(m *execArgs, code int, output string, hide bool) string {
	detail := fmt.Sprintf("The command in service %q of sandbox %s exited with code %d.", m.Service.ValueString(), m.SandboxID.ValueString(), code)
	switch {
	case hide:
		detail += " Its output is not shown (sensitive_output = true)."
	case strings.TrimSpace(output) != "":
		detail += " Its last lines:\n" + lastLines(output, 20)
	}
	return detail
}

// cappedOutput keeps the first limit bytes written to it and how many
// more there were.
type cappedOutput struct {
	limit int
	buf   []byte
	cut   int
}

func (c *cappedOutput) Write(p []byte) (int, error) {
	room := max(c.limit-len(c.buf), 0)
	take := min(room, len(p))
	c.buf = append(c.buf, p[:take]...)
	c.cut += len(p) - take
	return len(p), nil
}

// String is what was kept, with a note at its end when some was cut.
func (c *cappedOutput) String() string {
	if c.cut == 0 {
		return string(c.buf)
	}
	return fmt.Sprintf("%s\n[output_limit: %d more bytes were cut]\n", c.buf, c.cut)
}

// tailOutput keeps the last bytes written, for a failure's last lines.
type tailOutput struct {
	w   io.Writer
	buf []byte
}

func (t *tailOutput) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 8192 {
		t.buf = t.buf[len(t.buf)-8192:]
	}
	if t.w != nil {
		return t.w.Write(p)
	}
	return len(p), nil
}
