package provider

import (
	"bytes"
	"context"

	"github.com/hashicorp/terraform-plugin-framework/action"
)

var (
	_ action.Action               = &ExecAction{}
	_ action.ActionWithConfigure  = &ExecAction{}
	_ action.ActionWithModifyPlan = &ExecAction{}
)

// NewExecAction is the action constructor.
func NewExecAction() action.Action { return &ExecAction{} }

// ExecAction is the sandboxer_exec action: a command now, its output as
// progress.
type ExecAction struct {
	data *providerData
}

func (a *ExecAction) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	a.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

// ModifyPlan refuses, at plan time, a command the sandbox cannot run.
func (a *ExecAction) ModifyPlan(ctx context.Context, req action.ModifyPlanRequest, resp *action.ModifyPlanResponse) {
	if a.data == nil {
		return
	}
	var m execArgs
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	m.checkAtPlan(ctx, a.data, &resp.Diagnostics)
}

func (a *ExecAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m execArgs
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ereq, timeout := m.execRequest(ctx, m.Command, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	lines := &progressLines{send: func(line string) { resp.SendProgress(action.InvokeProgressEvent{Message: line}) }}
	tail := &tailOutput{w: lines}
	ereq.Stdout = tail
	res, err := runCommand(ctx, a.data, &m, ereq, timeout)
	lines.flush()
	if err != nil {
		resp.Diagnostics.AddError("Unable to Run Command", err.Error())
		return
	}
	if res.ExitCode != 0 {
		resp.Diagnostics.AddError("Command Failed", exitError(&m, res.ExitCode, string(tail.buf), false))
	}
}

// progressLines sends each whole line written to it as it arrives.
type progressLines struct {
	send    func(string)
	pending []byte
}

func (p *progressLines) Write(b []byte) (int, error) {
	p.pending = append(p.pending, b...)
	for {
		i := bytes.IndexByte(p.pending, '\n')
		if i < 0 {
			return len(b), nil
		}
		p.send(string(p.pending[:i]))
		p.pending = p.pending[i+1:]
	}
}

// flush sends a last line that had no newline.
func (p *progressLines) flush() {
	if len(p.pending) > 0 {
		p.send(string(p.pending))
		p.pending = nil
	}
}
