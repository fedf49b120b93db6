package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
)

var (
	_ resource.Resource               = &CommandResource{}
	_ resource.ResourceWithConfigure  = &CommandResource{}
	_ resource.ResourceWithModifyPlan = &CommandResource{}
)

// NewCommandResource is the resource constructor.
func NewCommandResource() resource.Resource { return &CommandResource{} }

// CommandResource is sandboxer_command: a command run once in a service.
type CommandResource struct {
	data *providerData
}

func (r *CommandResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

// ModifyPlan refuses a command the sandbox cannot run, when the sandbox
// exists: an unknown service, or a sandbox stopped on purpose.
func (r *CommandResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || !req.State.Raw.IsNull() || r.data == nil {
		return // destroy, an existing run, or provider not configured yet
	}
	var m commandModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	m.checkAtPlan(ctx, r.data, &resp.Diagnostics)
}

func (r *CommandResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m commandModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ereq, timeout := m.execRequest(ctx, m.Command, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	limit := int(m.OutputLimit.ValueInt64())
	stdout, stderr := &cappedOutput{limit: limit}, &cappedOutput{limit: limit}
	tail := &tailOutput{w: stdout}
	ereq.Stdout, ereq.Stderr = tail, stderr
	res, err := runCommand(ctx, r.data, &m.execArgs, ereq, timeout)
	if err != nil {
		resp.Diagnostics.AddError("Unable to Run Command", err.Error())
		return
	}
	hide := m.SensitiveOutput.ValueBool()
	if !hide {
		tflog.Debug(ctx, "command output", map[string]any{"exit_code": res.ExitCode, "stdout": stdout.String(), "stderr": stderr.String()})
	}
	if res.ExitCode != 0 {
		resp.Diagnostics.AddError("Command Failed", exitError(&m.execArgs, res.ExitCode, string(tail.buf)+stderr.String(), hide))
		return
	}
	m.ID = types.StringValue(backends.NewID())
	m.ExitCode = types.Int64Value(int64(res.ExitCode))
	m.Stdout, m.Stderr = types.StringValue(stdout.String()), types.StringValue(stderr.String())
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Read keeps the run as it is: it happened, and nothing on the host
// records it.
func (r *CommandResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
}

// Update never runs: every argument replaces the run.
func (r *CommandResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m commandModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Delete runs destroy_command, when set, in a sandbox that is still there
// and running.
func (r *CommandResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m commandModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || m.DestroyCommand.IsNull() {
		return
	}
	ereq, timeout := m.execRequest(ctx, m.DestroyCommand, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	tail := &tailOutput{}
	ereq.Stdout = tail
	res, err := runCommand(ctx, r.data, &m.execArgs, ereq, timeout)
	var gone bool
	if err != nil {
		_, sb, lerr := r.data.locateSandbox(ctx, m.SandboxID.ValueString(), m.Host.ValueString())
		gone = lerr != nil || sb.Stopped() || errors.Is(err, backends.ErrServiceNotRunning)
	}
	switch {
	case gone:
		resp.Diagnostics.AddWarning("Destroy Command Skipped", fmt.Sprintf("destroy_command did not run: %v", err))
	case err != nil:
		resp.Diagnostics.AddError("Unable to Run Destroy Command", err.Error())
	case res.ExitCode != 0:
		resp.Diagnostics.AddError("Destroy Command Failed", exitError(&m.execArgs, res.ExitCode, string(tail.buf), m.SensitiveOutput.ValueBool()))
	}
}
