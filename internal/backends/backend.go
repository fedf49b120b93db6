// Package backends is the extension contract and the orchestration around it:
// create (record, workspace, the extension's steps, then wait ready, cleaning
// up on failure), inspect and teardown of sandboxes on a host. It knows
// nothing of Terraform but its log, so every extension is testable with
// plain `go test` against real hosts.
package backends

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// ErrNotFound means the sandbox is not on the host (never was, or removed).
var ErrNotFound = errors.New("sandbox not found")

// Sandbox is the record of one sandbox. A copy is kept on its host beside the
// workspace (see records.go), so a sandbox can be read and imported from the
// host alone. It never holds secrets.
type Sandbox struct {
	ID             string            `json:"id"`
	Host           string            `json:"host"`
	Profile        string            `json:"profile"`
	Extension      string            `json:"extension"`
	Inputs         map[string]string `json:"inputs,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	WorkspaceDir   string            `json:"workspace_dir"`
	ComposeProject string            `json:"compose_project,omitempty"`
	ComposeFile    string            `json:"compose_file,omitempty"`
	// NetworkOverride: the provider chose the stack's network subnets, and
	// compose reads them from an override file beside the record
	// (composessh/networks.go). A flag, not a path: where the file is
	// follows from the workspace and id, never from what a record says.
	NetworkOverride bool `json:"network_override,omitempty"`
	// ComposeCommand is the compose command its create ran (composessh):
	// its stops, starts and teardown run the same without detecting it
	// again; one the host no longer has is detected again.
	ComposeCommand []string `json:"compose_command,omitempty"`
	// Rendered: compose runs the sandbox's rendered compose file
	// (composefile.Isolate), written beside the compose file; a flag for
	// the same reason as NetworkOverride.
	Rendered bool `json:"rendered,omitempty"`
	// PublishedPorts is the sandbox's published_ports ("free" or
	// "as_written"); empty in records from before it existed.
	PublishedPorts string `json:"published_ports,omitempty"`
	// WaitForPorts: the sandbox is ready only once every published TCP
	// port accepts a connection (also after an in-place restore).
	WaitForPorts bool     `json:"wait_for_ports,omitempty"`
	Services     []string `json:"services,omitempty"` // declared compose services
	// OneShot are the services whose compose file says `restart: "no"`:
	// one that exited 0 has completed (ServiceCompleted), not failed.
	OneShot    []string   `json:"one_shot,omitempty"`
	SourceHash string     `json:"source_hash,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	ReadyAt    *time.Time `json:"ready_at,omitempty"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"` // from the ttl; what a reaper acts on
	// CreateDeadline is set while the sandbox is being created: a record
	// still without ready_at after it passed belongs to a create that was
	// abandoned (the provider killed, the connection lost for good), and
	// the sandbox is stale: listed by the inventory, removed by the reaper.
	CreateDeadline *time.Time `json:"create_deadline,omitempty"`
	// TTL is the lifetime as the configuration wrote it ("2h", "120m"), so
	// an import reads back the same string and plans clean.
	TTL string `json:"ttl,omitempty"`
	// Replicas are the replicas an ext.swarm stack's compose file declares
	// for each replicated service (deploy.replicas, 1 when unset): what
	// refresh and readiness compare its running tasks with, so a service
	// scaled out of band (`docker service scale`) is drift. Kept here
	// because refresh and import have no compose file to read. A service
	// it does not name (a global one, or any of a record written before
	// the field) is compared with the engine's own desired count.
	Replicas map[string]int `json:"replicas,omitempty"`
	// OnExpiry is what the reaper does once the sandbox expires:
	// ExpiryStop stops it; empty destroys it.
	OnExpiry string `json:"on_expiry,omitempty"`
	// DesiredState is what the configuration last asked of the sandbox's
	// services: DesiredStopped, or empty for running. The inventory does
	// not call a sandbox stopped on purpose stale, and an import reads it.
	DesiredState string `json:"desired_state,omitempty"`
	// Rules are the policy and limits the sandbox was created under: a
	// restore in place checks and renders the restored compose file by
	// them, and the inventory says what each service may use (Limits).
	Rules *Rules `json:"rules,omitempty"`
	// Limits are what the sandbox's services may use together (each
	// service's limits, times its replicas); zero where any is unlimited.
	Limits *Limits `json:"limits,omitempty"`
	// Metered sandboxes are charged for their lifetime on teardown.
	HourlyPriceUSD float64 `json:"hourly_price_usd,omitempty"`
	QuoteUSD       float64 `json:"quote_usd,omitempty"`

	// Seen is what a create saw when the sandbox became ready (its
	// services' published ports among it), so that its state needs no
	// read-back. Not part of the record.
	Seen *Status `json:"-"`
	// Timings are the seconds the last create or start spent in each of
	// its phases (Timing*), and in all. Not part of the record.
	Timings map[string]float64 `json:"-"`
}

// The phases of a create or a start, as Sandbox.Timings names them.
const (
	TimingCopy   = "copy"   // the record and the workspace: the repo copied
	TimingRender = "render" // the compose file rendered and written
	TimingUp     = "up"     // `compose up` or `stack deploy`: pulls and builds included
	TimingStart  = "start"  // a stopped sandbox's services started
	TimingReady  = "ready"  // waiting for readiness
	TimingTotal  = "total"
)

// timings adds up the seconds of a create's or a start's phases.
type timings struct {
	start time.Time
	last  time.Time
	m     map[string]float64
}

func startTimings(now time.Time) *timings {
	return &timings{start: now, last: now, m: map[string]float64{}}
}

// done adds the time since the last phase ended to phase (none: the time
// is nobody's).
func (t *timings) done(phase string, now time.Time) {
	if phase != "" {
		t.m[phase] += now.Sub(t.last).Seconds()
	}
	t.last = now
}

// result rounds every phase to milliseconds and adds the total.
func (t *timings) result(now time.Time) map[string]float64 {
	out := map[string]float64{TimingTotal: roundMs(now.Sub(t.start).Seconds())}
	for k, v := range t.m {
		out[k] = roundMs(v)
	}
	return out
}

func roundMs(s float64) float64 { return math.Round(s*1000) / 1000 }

// FormatTTL writes a lifetime the way people write one: "2h", "1h30m",
// "45m", not time.Duration's "2h0m0s". An import of a record that predates
// the record's ttl field reads this.
func FormatTTL(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Sandbox states reported by Inspect.
const (
	StatusReady    = "ready"    // everything the profile promises is up
	StatusStopped  = "stopped"  // workspace present, services not running
	StatusDegraded = "degraded" // some services running, some not
	StatusMissing  = "missing"  // record present, workspace gone
)

// A sandbox's desired_state: its services running (the default), or
// stopped with everything else kept.
const (
	DesiredRunning = "running"
	DesiredStopped = "stopped"
)

// What the reaper does with an expired sandbox (on_expiry).
const (
	ExpiryDestroy = "destroy"
	ExpiryStop    = "stop"
)

// Expiry is the record's on_expiry: ExpiryDestroy or ExpiryStop.
func (sb *Sandbox) Expiry() string {
	if sb.OnExpiry == ExpiryStop {
		return ExpiryStop
	}
	return ExpiryDestroy
}

// Stopped says whether a record asks for its services stopped.
func (sb *Sandbox) Stopped() bool { return sb.DesiredState == DesiredStopped }

// Desired is the record's desired state: DesiredRunning or DesiredStopped.
func (sb *Sandbox) Desired() string {
	if sb.Stopped() {
		return DesiredStopped
	}
	return DesiredRunning
}

// ServiceMissing is the state of a service with no container (or swarm
// service) on the host.
const ServiceMissing = "missing"

// ServiceCompleted is the state of a one-shot service (`restart: "no"`,
// an init or migration container) whose container exited 0: done, as it
// should be. It counts as ready, not as up: a stack where nothing else
// runs is stopped.
const ServiceCompleted = "completed"

// ServiceState is one compose service as seen on the host.
type ServiceState struct {
	Name  string
	State string // running, exited, ..., or ServiceMissing
	Ports []Port // published ports, by target then protocol
}

// Port is a container port published on the host.
type Port struct {
	Target    int    // the container port
	Protocol  string // tcp, udp, sctp
	HostIP    string // the address the engine binds: "0.0.0.0", "::" or one address
	Published int    // the host port
}

// EndpointKey is a published port's key in a sandbox's endpoints:
// "<service>:<target>", with "/<protocol>" appended when it is not TCP.
func EndpointKey(service string, target int, protocol string) string {
	key := service + ":" + strconv.Itoa(target)
	if protocol != "" && protocol != "tcp" {
		key += "/" + protocol
	}
	return key
}

// Published ports of a compose sandbox (the sandbox's published_ports).
const (
	// PortsFree gives each published port a free host port per sandbox.
	PortsFree = "free"
	// PortsAsWritten keeps the compose file's host ports.
	PortsAsWritten = "as_written"
)

// Status is what Inspect sees on the host.
type Status struct {
	State    string
	Services []ServiceState
}

// SandboxState is a sandbox's state from what its extension saw: whether
// its workspace exists, and of its declared services how many are ready
// and how many are up at all (ready, or running but not yet healthy).
func SandboxState(workspace bool, declared, ready, up int) string {
	switch {
	case !workspace:
		return StatusMissing
	case ready == declared:
		return StatusReady
	case up == 0:
		return StatusStopped
	default:
		return StatusDegraded
	}
}

// Describe is "name=state, ..." of services, for messages.
func Describe(services []ServiceState) string {
	parts := make([]string, len(services))
	for i, s := range services {
		parts[i] = s.Name + "=" + s.State
	}
	return strings.Join(parts, ", ")
}

// ReadyStatus is the status of a sandbox just created: what its create saw
// ready, or every declared service running when its extension read
// nothing more.
func ReadyStatus(sb *Sandbox) Status {
	if sb.Seen != nil {
		return *sb.Seen
	}
	st := Status{State: StatusReady}
	for _, name := range sb.Services {
		st.Services = append(st.Services, ServiceState{Name: name, State: "running"})
	}
	return st
}

// Request asks an extension for a new sandbox.
type Request struct {
	ID         string
	Profile    *catalog.Profile
	Host       *hosts.Host
	Inputs     map[string]string
	Env        map[string]string // secret: written to the workspace, never to the record
	Labels     map[string]string
	SourceHash string
	// Fill, when set, populates the new sandbox's workspace (and its
	// compose volumes) before the sandbox starts: a restore from a snapshot.
	Fill func(ctx context.Context, sb *Sandbox) error
	// FillVolumes, when set, fills the volumes Fill left empty. It runs
	// once Fill has, beside the steps that may run while it does
	// (Step.WhileFilling), and returns before any other step starts.
	// settled (nil: nothing to wait for) waits for what it leaves
	// running on the host, which the create waits for before the sandbox
	// is ready or torn down.
	FillVolumes func(ctx context.Context, sb *Sandbox) (settled func() error, err error)
	// Extension, when set, overrides the profile's (routing chose another).
	Extension string
	// TTL, when set, gives the sandbox an expiry; TTLText is how the
	// configuration wrote it (kept in the record).
	TTL     time.Duration
	TTLText string
	// Metered, when set, charges the sandbox through the registry's ledger:
	// a hold of QuoteUSD at create, the measured lifetime at teardown.
	Metered *Metering
	// PublishedPorts is PortsFree (the default when empty) or PortsAsWritten.
	PublishedPorts string
	// WaitForPorts: ready only once every published TCP port accepts a
	// connection on the host.
	WaitForPorts bool
	// OnExpiry is ExpiryStop to have the reaper stop the sandbox once it
	// expires; empty or ExpiryDestroy destroys it.
	OnExpiry string
	// Rules are the host's policy, tightened by the sandbox's, and its
	// limits: checked again on the project that is rendered and run.
	Rules Rules
}

// Metering is the price of a metered sandbox.
type Metering struct {
	HourlyPriceUSD float64
	QuoteUSD       float64
}

// Extension is a backend that establishes sandboxes. Optional capabilities
// (snapshots, metering) are separate interfaces an extension may also satisfy.
type Extension interface {
	// Name is the extension's catalog name, e.g. "ext.compose-ssh".
	Name() string
	// Validate checks a request without touching the host (plan time).
	Validate(p *catalog.Profile, inputs map[string]string) error
	// Prepare works out a new sandbox without making anything on the host
	// (it may read it): what its record says beyond what every record
	// does (id, host, profile, extension, inputs, labels, source hash,
	// creation time: the registry sets those), and the steps that make and
	// start it. The registry runs them (Registry.create) once it has
	// written the record and made the workspace, and tears the sandbox
	// down when one fails.
	Prepare(ctx context.Context, req Request) (*Sandbox, []Step, error)
	// WaitReady blocks until the sandbox is ready or ctx ends, and returns
	// the status it saw ready (with the services' published ports).
	WaitReady(ctx context.Context, h *hosts.Host, sb *Sandbox) (Status, error)
	// Inspect reports the live state of a recorded sandbox.
	Inspect(ctx context.Context, h *hosts.Host, sb *Sandbox) (Status, error)
	// Teardown removes everything the sandbox created. It is idempotent:
	// a sandbox already (partly) gone is success. sb may hold only ID and
	// WorkspaceDir when the record itself is lost.
	Teardown(ctx context.Context, h *hosts.Host, sb *Sandbox) error
}

// Finisher is an Extension whose teardown can end with the registry's own
// last step, then: its last host command runs then (a script without
// content) only when all before it succeeded, so a destroy costs one
// round trip after the record's read. Teardown is TeardownThen with no
// then.
type Finisher interface {
	TeardownThen(ctx context.Context, h *hosts.Host, sb *Sandbox, then string) error
}

// Step is one step of a create, run in a workspace that exists and is
// recorded; Run may complete the record Prepare returned.
type Step struct {
	Name string // for the log
	Run  func(ctx context.Context) error
	// RunWith, when set, runs the step instead of Run, taking the host
	// work the create has pending (its record, its workspace): it runs
	// that first, in its first host command (Pending.Take), or leaves it
	// pending for the next step. A step with Run finds it done.
	RunWith func(ctx context.Context, pending *Pending) error
	// WhileFilling: the step needs the workspace's files but not the
	// volumes', so it may run while Request.FillVolumes does.
	WhileFilling bool
	// Timing is the phase of Sandbox.Timings its time counts in.
	Timing string
}

// Planner is an Extension that can tell at plan time, from the client
// alone, what a sandbox will run. env is what the workspace .env will hold
// (empty when the sandbox writes none).
type Planner interface {
	Plan(p *catalog.Profile, inputs, env map[string]string, opts PlanOptions) (Plan, error)
}

// PlanOptions are the sandbox's arguments a plan's checks depend on.
type PlanOptions struct {
	PublishedPorts string // PortsFree (default when empty) or PortsAsWritten
	// Rules are the host's policy, tightened by the sandbox's, and its
	// limits.
	Rules Rules
}

// Plan is what a Planner learned: the services (sorted by name) and
// findings for the plan. Its error may join several (errors.Join): every
// problem of a compose file is reported at once.
type Plan struct {
	Services []string
	Warnings []Finding
}

// Finding is a plan-time warning or note. Each kind of finding has its own
// summary: Terraform folds warnings that share one ("and N more similar
// warnings"), and a docker socket mount must never hide behind a port.
type Finding struct {
	Summary string
	Detail  string
}

// Snapshotter is an Extension whose sandboxes can be checkpointed. It says
// how to hold a sandbox still while its files are read or written.
type Snapshotter interface {
	// Pause freezes the sandbox's processes (quiesce = "pause"); Unpause
	// undoes it and is always called after a Pause, also on failure.
	Pause(ctx context.Context, h *hosts.Host, sb *Sandbox) error
	Unpause(ctx context.Context, h *hosts.Host, sb *Sandbox) error
	// Stop and Start bracket an in-place restore; after Start the registry
	// waits for readiness again.
	Stop(ctx context.Context, h *hosts.Host, sb *Sandbox) error
	Start(ctx context.Context, h *hosts.Host, sb *Sandbox) error
}

// Stopper is an Extension whose sandboxes can be stopped and started again
// in place (desired_state): every container stops; the workspace, volumes,
// networks and record stay. StopServices returns the status the stop left
// (read by the same command where it can). The registry waits for
// readiness after a start, as after a create. pending (the sandbox's
// record, when the change rewrites it) runs first: in the stop's or the
// start's own command where it can (Pending.Take), else by itself (Flush).
type Stopper interface {
	StopServices(ctx context.Context, h *hosts.Host, sb *Sandbox, pending *Pending) (Status, error)
	StartServices(ctx context.Context, h *hosts.Host, sb *Sandbox, pending *Pending) error
}

// SnapshotChecker is a Snapshotter that can refuse a checkpoint of one of
// its sandboxes as it runs (a swarm stack whose tasks may move): asked at
// plan time when the sandbox exists, and again before every capture. It
// only reads the host.
type SnapshotChecker interface {
	CheckSnapshot(ctx context.Context, h *hosts.Host, sb *Sandbox, quiesce string, volumes bool) error
}
