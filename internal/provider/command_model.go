package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	actionschema "github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// sandboxer_command (resource) and sandboxer_exec (action): a command run
// in a sandbox's service. Their shared arguments are one schema
// (execArguments), so their descriptions and validators cannot differ.

// execArgs are the arguments both take.
type execArgs struct {
	Host      types.String `tfsdk:"host"`
	SandboxID types.String `tfsdk:"sandbox_id"`
	Service   types.String `tfsdk:"service"`
	Command   types.List   `tfsdk:"command"`
	Env       types.Map    `tfsdk:"env"`
	User      types.String `tfsdk:"user"`
	Workdir   types.String `tfsdk:"workdir"`
	Timeout   types.String `tfsdk:"timeout"`
}

// commandModel is the sandboxer_command resource's data.
type commandModel struct {
	execArgs
	ID              types.String `tfsdk:"id"`
	Triggers        types.Map    `tfsdk:"triggers"`
	OutputLimit     types.Int64  `tfsdk:"output_limit"`
	SensitiveOutput types.Bool   `tfsdk:"sensitive_output"`
	DestroyCommand  types.List   `tfsdk:"destroy_command"`
	ExitCode        types.Int64  `tfsdk:"exit_code"`
	Stdout          types.String `tfsdk:"stdout"`
	Stderr          types.String `tfsdk:"stderr"`
}

// defaultCommandTimeout bounds a command when its timeout is unset.
const defaultCommandTimeout = "10m"

// defaultOutputLimit is output_limit's default: 64 KiB of each stream.
const defaultOutputLimit = 64 << 10

var (
	listReplaces  = []planmodifier.List{listplanmodifier.RequiresReplace()}
	mapReplaces   = []planmodifier.Map{mapplanmodifier.RequiresReplace()}
	int64Replaces = []planmodifier.Int64{int64planmodifier.RequiresReplace()}
	boolReplaces  = []planmodifier.Bool{boolplanmodifier.RequiresReplace()}
)

var commandValidators = []validator.List{listvalidator.SizeAtLeast(1), listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1))}

// execArguments are the schema of execArgs, as a resource's attributes.
func execArguments() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"host": schema.StringAttribute{Optional: true,
			MarkdownDescription: "The sandbox's host (found by asking the provider's hosts when unset)."},
		"sandbox_id": schema.StringAttribute{Required: true, Validators: []validator.String{idValidator("sandbox")},
			MarkdownDescription: "The sandbox to run the command in."},
		"service": schema.StringAttribute{Required: true,
			MarkdownDescription: "The compose service: the command runs in its first running container (by name), on compose v2, v1 " +
				"and swarm (a task on the manager's node). An unknown service is an error at plan time when the sandbox exists; a sandbox with " +
				"`desired_state = \"stopped\"`, at apply (the same apply may start it)."},
		"command": schema.ListAttribute{Required: true, ElementType: types.StringType, Validators: commandValidators,
			MarkdownDescription: "The program and its arguments, run as they are: no shell, unless the list names one (`[\"sh\", \"-c\", \"...\"]`)."},
		"env": schema.MapAttribute{Optional: true, Sensitive: true, ElementType: types.StringType,
			MarkdownDescription: "Environment variables for the command. Their values reach the host in a file only its user can read, removed before the command starts: never on a command line."},
		"user": schema.StringAttribute{Optional: true,
			MarkdownDescription: "User (name or uid[:gid]) to run as in the container. Default: the container's."},
		"workdir": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Working directory in the container. Default: the container's."},
		"timeout": schema.StringAttribute{Optional: true, Validators: []validator.String{positiveDuration()},
			MarkdownDescription: "How long the command may run, e.g. `30s` or `5m` (default `" + defaultCommandTimeout + "`). Past it, every " +
				"process the command started in the container is killed, and the run fails."},
	}
}

func (r *CommandResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_command"
}

func (r *CommandResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attrs := execArguments()
	for name, a := range attrs {
		// Every argument replaces the run: it ran with the values it had.
		switch a := a.(type) {
		case schema.StringAttribute:
			a.PlanModifiers = []planmodifier.String{stringplanmodifier.RequiresReplace()}
			attrs[name] = a
		case schema.ListAttribute:
			a.PlanModifiers = listReplaces
			attrs[name] = a
		case schema.MapAttribute:
			a.PlanModifiers = mapReplaces
			attrs[name] = a
		}
	}
	attrs["id"] = schema.StringAttribute{Computed: true, PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		MarkdownDescription: "An id of this run."}
	attrs["triggers"] = schema.MapAttribute{Optional: true, ElementType: types.StringType, PlanModifiers: mapReplaces,
		MarkdownDescription: "Arbitrary values: a change runs the command again (the resource is replaced)."}
	attrs["output_limit"] = schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(defaultOutputLimit),
		PlanModifiers: int64Replaces, MarkdownDescription: "Bytes kept of `stdout` and of `stderr` each (default 65536); what is cut is " +
			"said at its end."}
	attrs["sensitive_output"] = schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
		PlanModifiers: boolReplaces, MarkdownDescription: "`true`: a failed run's error does not show the command's last lines, and the " +
			"DEBUG log has nothing of its output. (`stdout` and `stderr` are always marked sensitive: Terraform cannot make that depend on " +
			"an argument. Read them with `nonsensitive()` where they are not secret.)"}
	attrs["destroy_command"] = schema.ListAttribute{Optional: true, ElementType: types.StringType, Validators: commandValidators,
		MarkdownDescription: "A command run in the same service, with the same env, user and workdir, before the resource is " +
			"destroyed, e.g. to dump a database. Its failure fails the destroy. Skipped, with a warning, when the sandbox is gone or stopped."}
	attrs["exit_code"] = schema.Int64Attribute{Computed: true, MarkdownDescription: "The command's exit code: always 0 in state " +
		"(a non-zero exit fails the apply)."}
	attrs["stdout"] = schema.StringAttribute{Computed: true, Sensitive: true,
		MarkdownDescription: "The command's standard output, up to `output_limit` bytes."}
	attrs["stderr"] = schema.StringAttribute{Computed: true, Sensitive: true,
		MarkdownDescription: "The command's standard error, up to `output_limit` bytes."}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A command run once in a service of a sandbox when this resource is created, for values other " +
			"resources need: a migration before the tests, an admin token a service generated, seed data. A non-zero exit fails " +
			"the apply, naming the exit code and the last lines; the resource is then not created. Change `triggers` (or any " +
			"argument) to run it again. It runs through the host's pooled connection: no SSH handshake of its own.",
		Attributes: attrs,
	}
}

func (a *ExecAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_exec"
}

func (a *ExecAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = actionschema.Schema{
		MarkdownDescription: "Runs a command in a service of a sandbox now (`terraform apply -invoke=action.sandboxer_exec.x`, or an " +
			"`action_trigger`): its output streams as progress, line by line, while it runs; a non-zero exit is an error naming the " +
			"exit code and the last lines. Nothing is kept in state. Needs Terraform >= 1.14.",
		Attributes: actionAttributes(execArguments()),
	}
}
